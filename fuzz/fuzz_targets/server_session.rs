//! Fuzz target: `wulf::fuzzing::server_session` on libFuzzer's inputs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = wulf::fuzzing::server_session(data);
});
