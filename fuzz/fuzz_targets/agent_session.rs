//! Fuzz target: `wulf::fuzzing::agent_session` on libFuzzer's inputs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = wulf::fuzzing::agent_session(data);
});
