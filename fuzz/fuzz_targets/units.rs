//! Fuzz target: `wulf::fuzzing::units` on libFuzzer's inputs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wulf::fuzzing::units(data);
});
