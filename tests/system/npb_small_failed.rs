//! A NAS run that fails verification (issue 31, item 6): its result file
//! keeps the values it got wrong beside NPB's references, not only the
//! error's text, and its table's header says that no run verified (never
//! "best of 1 verified runs"), and IS's counts print as integers. The corruption is the kernels' test hook
//! (`WULF_NPB_FAULT`), one value changed on rank 0.

use crate::common::*;

use wulf::result::read_npb_result;

#[test]
fn a_failed_verification_keeps_the_wrong_values_and_says_none_verified() {
    let _s = serial();
    for (kernel, fault, name) in [
        ("is", "is-key", "keys in order"),
        ("cg", "cg-value", "zeta"),
    ] {
        let dir = tempdir();
        let out = file(&dir, "r.json");
        let o = wulf(&["npb", kernel, "--class", "S", "--np", "2", "--via", "shm"])
            .args(["--repetitions", "1", "--json", out.to_str().unwrap()])
            .env(wulf::npb::fault::FAULT_VAR, fault)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{kernel}: {}", stderr(&o));
        // Counts print as NPB prints them, integers (not 5.0000000000000e1).
        if kernel == "is" {
            let err = stderr(&o);
            assert!(err.contains("passed 50, reference 50 "), "{err}");
            assert!(!err.contains("e1,"), "{err}");
        }
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(text.contains("no run verified"), "{kernel}: {text}");
        assert!(!text.contains("verified run"), "{kernel}: {text}");
        let r = read_npb_result(&out).unwrap();
        let run = &r.runs[0];
        assert!(run.error.is_some() && run.outcomes.is_empty(), "{kernel}");
        let check = run
            .failed_checks
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{kernel}: no {name} in {:?}", run.failed_checks));
        // The wrong value itself, apart from the reference and out of
        // the allowed error (CG's zeta may be NaN: then null).
        assert!(check.value != Some(check.reference), "{kernel}: {check:?}");
        if let (Some(e), Some(allowed)) = (check.relative_error, check.allowed_relative_error) {
            assert!(e > allowed, "{kernel}: {check:?}");
        }
        // As written: the raw JSON carries the field.
        let raw = json(&out);
        assert!(
            raw["runs"][0]["failed_checks"][0]["reference"].is_number(),
            "{raw}"
        );
    }
}
