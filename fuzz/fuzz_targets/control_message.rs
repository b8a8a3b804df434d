//! Fuzz target: `wulf::fuzzing::control_message` on libFuzzer's inputs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    wulf::fuzzing::control_message(data);
});
