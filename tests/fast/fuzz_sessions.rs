//! The properties of the session and any-kind fuzz targets
//! (`wulf::fuzzing::{server_session, agent_session, any_result_file}`,
//! `fuzz/`), checked by proptest within `cargo test` in bounded time:
//! message sequences in any order and shape end a server's or an agent's
//! session without a panic, no test starts before the handshake is over,
//! an agent sends nothing of its machine to a coordinator that cannot
//! prove the secret, and results of every kind with extreme values are
//! refused or drawn by every exporter and by `compare`.

use proptest::prelude::*;
use serde_json::Value;

use super::fuzz_properties::{any_json, extreme_f64, mutate};

/// One line of a session: mostly the placeholder words that become
/// well-formed messages, sometimes a request with odd values, or garbage.
fn session_line() -> impl Strategy<Value = String> {
    let words = [
        "HELLO",
        "AUTH",
        "SETUP",
        "BLOCK",
        "STOP",
        "BYE",
        "CHALLENGE",
    ];
    prop_oneof![
        5 => prop::sample::select(words.to_vec()).prop_map(String::from),
        1 => (any::<u64>(), prop::sample::select(vec!["stream", "pingpong", "bidir", "x"]))
            .prop_map(|(n, m)| format!(
                r#"{{"cmd":"block","mode":"{m}","kind":"timed","bytes":{n},"repeats":{n}}}"#
            )),
        1 => any_json().prop_map(|v| v.to_string()),
        1 => "[ -~]{0,40}",
    ]
}

/// A session's lines, mostly after a well-formed start (`start`, as far
/// as `depth` of it), so that the later states are reached too.
fn session(start: &[&str]) -> impl Strategy<Value = Vec<u8>> {
    let start: Vec<String> = start.iter().map(|s| s.to_string()).collect();
    (0..=start.len(), prop::collection::vec(session_line(), 0..6)).prop_map(move |(depth, rest)| {
        let mut all = start[..depth].to_vec();
        all.extend(rest);
        let mut text = all.join("\n");
        text.push('\n');
        text.into_bytes()
    })
}

/// The fixtures of every kind of result.
fn fixtures() -> &'static [Value] {
    static DOCS: std::sync::OnceLock<Vec<Value>> = std::sync::OnceLock::new();
    DOCS.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/any_result");
        ["sweep", "npb", "matrix", "study", "collective"]
            .iter()
            .map(|k| {
                let text = std::fs::read_to_string(dir.join(format!("{k}.json"))).unwrap();
                serde_json::from_str(&text).unwrap()
            })
            .collect()
    })
}

#[test]
fn a_well_formed_session_reaches_its_test_and_garbage_is_answered() {
    let kinds = wulf::fuzzing::server_session(b"HELLO\nAUTH\nSETUP\nBLOCK\n");
    assert_eq!(
        kinds[..5],
        ["hello", "challenge", "welcome", "listening", "ready"],
        "{kinds:?}"
    );
    let kinds = wulf::fuzzing::server_session(b"HELLO\n{\"cmd\":");
    assert_eq!(kinds, ["hello", "challenge", "error"], "{kinds:?}");
}

#[test]
fn an_agent_sends_nothing_of_its_machine_without_the_coordinators_proof() {
    let wrong = b"HELLO\nCHALLENGE\n{\"order\":\"proof\",\"proof\":\"00\",\"mesh\":\"00\"}\n";
    let (sent, outcome) = wulf::fuzzing::agent_session(wrong);
    // Its Hello and its claim, then only why it ends (issue 26: a refusal
    // is said), nothing of its machine.
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(sent[1].contains("\"proof\""), "{sent:?}");
    assert!(
        sent[2].contains("\"refused\"") && !sent[2].contains("host"),
        "{sent:?}"
    );
    assert!(outcome.is_some());
}

/// The theory's fixture as JSON of every kind must all be readable (the
/// property below mutates them): a fixture that stopped parsing would
/// make it vacuous.
#[test]
fn every_kinds_fixture_is_read() {
    for doc in fixtures() {
        let text = doc.to_string();
        let r = wulf::result::parse_any(&text, "fixture");
        assert!(r.is_ok(), "{}: {r:?}", doc["kind"]);
    }
}

proptest! {
    // Each case is a session over loopback (up to a few hundred ms).
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn server_sessions_take_any_message_sequence(v in session(&["HELLO", "AUTH", "SETUP"])) {
        let kinds = wulf::fuzzing::server_session(&v);
        // The server speaks first, and no test starts before a welcome.
        prop_assert!(kinds.first().is_none_or(|k| k == "hello"), "{kinds:?}");
        let at = |k: &str| kinds.iter().position(|x| x == k);
        if let Some(r) = at("listening") {
            prop_assert!(at("welcome").is_some_and(|w| w < r), "{kinds:?}");
        }
    }

    #[test]
    fn agent_handshakes_take_any_coordinator_messages(v in session(&["HELLO", "CHALLENGE"])) {
        let (sent, outcome) = wulf::fuzzing::agent_session(&v);
        // Without the secret's proof, the agent never joins and never
        // sends its fingerprint.
        prop_assert!(outcome.is_some());
        prop_assert!(sent.iter().all(|l| !l.contains("serve_address")), "{sent:?}");
    }
}

proptest! {
    // Each case reads and draws a whole report of one kind.
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn results_of_every_kind_with_extreme_values_are_refused_or_drawn(
        kind in 0usize..5,
        picks in prop::collection::vec((any::<usize>(), extreme_f64()), 1..4),
    ) {
        let mut doc = fixtures()[kind].clone();
        for (pick, x) in picks {
            mutate(&mut doc, pick, Value::from(x));
        }
        wulf::fuzzing::any_result_file(doc.to_string().as_bytes());
    }
}
