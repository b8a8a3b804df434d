//! Entry points for fuzzing: each takes arbitrary bytes, as they would
//! arrive from the network or a file, and must return without panicking,
//! hanging or allocating out of proportion to the input. The cargo-fuzz
//! targets in `fuzz/` call them with libFuzzer's inputs; the property
//! tests in `tests/fast/fuzz_properties.rs` call them with proptest's within
//! `cargo test`, so the same properties are checked on every run.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::cluster::protocol::{CellReport, Claim, Join, Order};
use crate::peer::protocol::{parse_line, Hello, Reply, Request};

/// The control-message decoders of `wulf serve`, its clients and the
/// cluster's agents and coordinator.
pub fn control_message(data: &[u8]) {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_line::<Hello>(line);
    let _ = parse_line::<Request>(line);
    let _ = parse_line::<Reply>(line);
    let _ = parse_line::<Order>(line);
    let _ = parse_line::<Claim>(line);
    let _ = parse_line::<Join>(line);
    let _ = parse_line::<CellReport>(line);
}

/// The result reader behind `wulf report` and `wulf compare`, and when it
/// accepts the input, the analysis and every exporter of it.
pub fn result_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(r) = crate::result::parse_result(text, "fuzz input") {
        let results = [r];
        let _ = crate::analysis::Analysis::of(&results[0]);
        let _ = crate::report::html::to_html(&crate::report::ReportInput::of_sweeps(&results));
        let _ = crate::report::format::csv::to_csv(&results);
        let _ = crate::report::format::markdown::to_markdown(&results);
    }
}

/// Only the decoding part of [`result_file`] (the part whose memory must
/// stay proportional to the input), and the reader of every kind behind
/// `wulf report`, which dispatches on the input's `kind`.
pub fn result_decoder(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crate::result::parse_result(text, "fuzz input");
        let _ = crate::result::parse_any(text, "fuzz input");
    }
}

/// The parsers of sizes, durations, size schedules and host lists.
pub fn units(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = crate::units::parse_bytes(text);
    let _ = crate::units::parse_duration(text);
    let _ = crate::message::schedule::parse_sizes(text, true);
    let _ = crate::cluster::hostlist::expand(text);
    let _ = crate::cluster::hostlist::parse_hostfile(text);
}

/// Most lines of one session's input.
const MAX_LINES: usize = 64;

/// Longest a session driven by one input may take, in all.
const SESSION_LIMIT: Duration = Duration::from_secs(2);

/// One line of a session's input: a placeholder word (`HELLO`, `AUTH`,
/// `SETUP`, `BLOCK`, `STOP`, `BYE`, `CHALLENGE`) becomes that well-formed
/// message, so that the fuzzer can reach the later states with words from
/// its dictionary (`fuzz/dict/session.dict`); anything else goes as is.
fn session_line(line: &str) -> String {
    match line.trim() {
        "HELLO" => serde_json::to_string(&Hello::ours()).unwrap_or_default(),
        "AUTH" => r#"{"cmd":"auth","nonce":"00","proof":null}"#.into(),
        "SETUP" => concat!(
            r#"{"cmd":"setup","transport":"tcp","channel":{"sndbuf_bytes":null,"#,
            r#""rcvbuf_bytes":null,"nodelay":true,"ipv6":false,"timeout_ms":200},"#,
            r#""max_bytes":1024,"nocache":false,"offset_bytes":0,"cpu":null}"#
        )
        .into(),
        "BLOCK" => {
            r#"{"cmd":"block","mode":"pingpong","kind":"timed","bytes":8,"repeats":1}"#.into()
        }
        "STOP" => r#"{"cmd":"stop_loads"}"#.into(),
        "BYE" => r#"{"cmd":"bye"}"#.into(),
        "CHALLENGE" => format!(r#"{{"order":"challenge","nonce":"{}"}}"#, "c".repeat(64)),
        other => other.to_string(),
    }
}

/// Write the lines of `data` ([`session_line`]) to `to`.
fn send_lines(to: &mut TcpStream, data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    // lines(): a final newline ends the last line, it does not add one.
    for line in text.lines().take(MAX_LINES) {
        let mut line = session_line(line);
        line.push('\n');
        if to.write_all(line.as_bytes()).is_err() {
            return;
        }
    }
}

/// A `wulf serve` session (handshake, set-up, blocks) driven by the lines
/// of `data` as its client's messages, on loopback, under a server policy
/// with short limits: whatever arrives, in whatever order, the session
/// ends with an error or a goodbye, never a panic, and within the limits.
/// When the server opens a data channel, the driver connects to it as a
/// client would, so that blocks are reached. Returns the kinds of the
/// server's lines (`hello`, then `challenge`, `welcome`, ..., `error`),
/// for tests.
pub fn server_session(data: &[u8]) -> Vec<String> {
    use crate::peer::server::{session, LocalTransports, SessionPolicy, TestSlots};
    let Ok(listener) = TcpListener::bind("127.0.0.1:0") else {
        return Vec::new();
    };
    let Ok(addr) = listener.local_addr() else {
        return Vec::new();
    };
    let policy = SessionPolicy {
        max_bytes: 1 << 16,
        max_timeout: Duration::from_millis(200),
        max_session: SESSION_LIMIT,
        handshake_limit: Duration::from_secs(1),
        local_transports: LocalTransports::LoopbackClients,
        allow_pinning: false,
        allow_load: false,
        allow_lean_remote: false,
        max_memory_bytes: 16 << 20,
        secret: None,
    };
    let Ok(mut client) = TcpStream::connect(addr) else {
        return Vec::new();
    };
    let Ok((stream, _)) = listener.accept() else {
        return Vec::new();
    };
    let server = std::thread::spawn(move || {
        let _ = session(stream, &policy, Some(&TestSlots::new(1)), &mut |_| {});
    });
    send_lines(&mut client, data);
    let mut data_channel = None;
    let mut kinds = Vec::new();
    let until = Instant::now() + SESSION_LIMIT;
    replies(&client, until, |reply| {
        let v: serde_json::Value = serde_json::from_str(reply).unwrap_or_default();
        if v["reply"] == "listening" {
            data_channel = open_data(&v["description"]);
        }
        let kind = v["reply"].as_str().or(v["magic"].as_str().map(|_| "hello"));
        kinds.push(kind.unwrap_or("?").to_string());
    });
    drop((client, data_channel));
    // A panic of the session is the finding: passed on to the fuzzer.
    if let Err(panic) = server.join() {
        std::panic::resume_unwind(panic);
    }
    kinds
}

/// Each line `from` sends, to `on_line` as it arrives, until it closes,
/// is quiet for a moment, or `until` (at most [`MAX_LINES`] of them).
fn replies(from: &TcpStream, until: Instant, mut on_line: impl FnMut(&str)) {
    let Ok(reader) = from.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reader);
    for _ in 0..MAX_LINES {
        let left = until.saturating_duration_since(Instant::now());
        let quiet = left.min(Duration::from_millis(300));
        if quiet.is_zero() || reader.get_ref().set_read_timeout(Some(quiet)).is_err() {
            break;
        }
        let mut line = String::new();
        match (&mut reader).take(64 << 10).read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => on_line(&line),
        }
    }
}

/// The tcp data connection a `listening` reply describes, opened with its
/// token, as the client opens it.
fn open_data(description: &serde_json::Value) -> Option<TcpStream> {
    let port = u16::try_from(description["port"].as_u64()?).ok()?;
    let token = description["token"].as_str()?;
    let bytes: Vec<u8> = (0..token.len() / 2)
        .filter_map(|k| u8::from_str_radix(token.get(2 * k..2 * k + 2)?, 16).ok())
        .collect();
    let mut s = TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(200),
    )
    .ok()?;
    s.write_all(&bytes).ok()?;
    Some(s)
}

/// A matrix agent's handshake driven by the lines of `data` as the
/// coordinator's messages: it ends with an error (a coordinator that
/// cannot prove the run's secret gets nothing of this machine), never a
/// panic, within its deadline. Returns the agent's lines and its error
/// (None: it joined, which no coordinator without the secret can make it
/// do), for tests.
pub fn agent_session(data: &[u8]) -> (Vec<String>, Option<String>) {
    use crate::cluster::agent::{handshake_on, AgentOptions};
    let failed = || (Vec::new(), Some("no loopback connection".to_string()));
    let Ok(listener) = TcpListener::bind("127.0.0.1:0") else {
        return failed();
    };
    let Ok(addr) = listener.local_addr() else {
        return failed();
    };
    let Ok(agent_end) = TcpStream::connect(addr) else {
        return failed();
    };
    let Ok((mut coordinator, _)) = listener.accept() else {
        return failed();
    };
    let opts = AgentOptions {
        coordinator: vec![addr],
        name: "fuzz-node".into(),
        secret: "fuzz-secret".into(),
        serve_inline: false,
    };
    let agent = std::thread::spawn(move || handshake_on(agent_end, &opts, Duration::from_secs(1)));
    send_lines(&mut coordinator, data);
    let mut lines = Vec::new();
    replies(&coordinator, Instant::now() + SESSION_LIMIT, |l| {
        lines.push(l.to_string())
    });
    drop(coordinator);
    let outcome = match agent.join() {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(format!("{e:#}")),
        Err(panic) => std::panic::resume_unwind(panic),
    };
    (lines, outcome)
}

/// A result file of any kind (sweep, NPB, matrix, collective, study)
/// through the reader of `wulf report`, then, when it is accepted, every
/// exporter (HTML included) and, for a sweep, `wulf compare` against
/// itself in every style.
pub fn any_result_file(data: &[u8]) {
    use crate::result::AnyResult;
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(r) = crate::result::parse_any(text, "fuzz input") else {
        return;
    };
    let (mut sweeps, mut npb, mut studies) = (Vec::new(), Vec::new(), Vec::new());
    let (mut matrices, mut collectives, mut hpl) = (Vec::new(), Vec::new(), Vec::new());
    match r {
        AnyResult::Sweep(s) => sweeps.push(*s),
        AnyResult::Npb(n) => npb.push(*n),
        AnyResult::Matrix(m) => matrices.push(*m),
        AnyResult::Collective(c) => collectives.push(*c),
        AnyResult::Hpl(r) => hpl.push(*r),
        AnyResult::Study(s) => studies.push(crate::report::LoadedStudy {
            summary: *s,
            sweeps: Vec::new(),
        }),
    }
    let input = crate::report::ReportInput {
        sweeps: &sweeps,
        npb: &npb,
        studies: &studies,
        matrices: &matrices,
        collectives: &collectives,
        hpl: &hpl,
    };
    for exporter in crate::report::export::EXPORTERS {
        let _ = exporter.export(&input);
    }
    if !sweeps.is_empty() {
        use crate::report::compare::{render, Style};
        let c = crate::analysis::compare::compare(&sweeps, &sweeps, &Default::default());
        let _ = render(&c, "a", "b", Style::Text);
        let _ = render(&c, "a", "b", Style::Markdown);
        let _ = crate::report::html::compare::to_html(&[crate::report::html::compare::Section {
            a_name: "a".into(),
            b_name: "b".into(),
            comparison: c,
        }]);
    }
}
