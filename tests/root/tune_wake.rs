//! `wulf tune tcp --wake-up` on loopback (issue 44): each wake-up remedy
//! is a configuration measured against the baseline, or skipped with the
//! reason, its advice is in the summary, and the host's busy-polling
//! sysctls are what they were afterwards. Root: busy_read and
//! /dev/cpu_dma_latency are root's to set. Holds `common::serial()`: the
//! remedies change the whole machine's waits, and the configurations'
//! figures are compared with each other. No test asserts a speed.

use crate::common;
use common::*;

use wulf::tune::wake::{WakeRemedy, BUSY_POLL_SYSCTLS};
use wulf::tune::TuneSummary;

fn sysctls() -> Vec<Option<String>> {
    BUSY_POLL_SYSCTLS
        .iter()
        .map(|s| std::fs::read_to_string(format!("/proc/sys/{s}")).ok())
        .collect()
}

#[test]
fn each_wake_up_remedy_is_measured_or_skipped_with_its_reason_and_busy_read_is_put_back() {
    let _serial = serial();
    let before = sysctls();
    let out = tempdir();
    let args = [
        "tune",
        "tcp",
        "--wake-up",
        "--budget",
        "14s",
        "--sizes",
        "8,64,1Ki",
        "--timeout",
        "5s",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ];
    let o = run(&args);
    assert_eq!(
        sysctls(),
        before,
        "the busy-polling sysctls were left changed"
    );
    assert!(o.status.success(), "wulf {args:?}: {}", stderr(&o));
    let dir = std::fs::read_dir(out.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let summary: TuneSummary =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tune.json")).unwrap())
            .expect("tune.json matches its schema");
    for r in WakeRemedy::ALL {
        let label = r.label();
        let measured = summary
            .configurations
            .iter()
            .any(|c| c.config.label == label && c.config.wake == Some(r));
        let skipped = summary.skipped.iter().find(|s| s.label == label);
        match (measured, skipped) {
            (true, None) => {
                let advice = summary
                    .recommendations
                    .iter()
                    .filter(|a| a.advice.starts_with(&label))
                    .count();
                assert_eq!(advice, 1, "{label}: {:#?}", summary.recommendations);
            }
            (false, Some(s)) => assert!(
                s.reason.contains("budget") || s.reason.starts_with("not changeable: "),
                "{label}: {}",
                s.reason
            ),
            _ => panic!("{label} neither measured nor skipped once: {summary:#?}"),
        }
    }
    let text = String::from_utf8_lossy(&o.stdout);
    if summary
        .configurations
        .iter()
        .any(|c| c.config.wake.is_some())
    {
        assert!(text.contains("[wake-up]"), "{text}");
    }
}
