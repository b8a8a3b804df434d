//! Fuzz target: `wulf::fuzzing::any_result_file` on libFuzzer's inputs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wulf::fuzzing::any_result_file(data);
});
