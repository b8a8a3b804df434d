//! Fuzz target: `wulf::fuzzing::result_file` on libFuzzer's inputs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wulf::fuzzing::result_file(data);
});
