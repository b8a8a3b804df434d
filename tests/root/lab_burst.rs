//! A Fast Ethernet lab link's peak is the link's, not the shaper's free
//! burst (issue 28): small messages cross an idle token bucket without
//! their serialization time (a "peak" of 197 Mbit/s, 2.06x the goodput,
//! at 1 KiB). The peak is taken past the burst, where it cannot add more
//! than 5%: a physical bound checked here, not a speed.

use crate::common;

#[test]
fn an_fe_links_peak_stays_within_its_goodput() {
    if !common::labs_possible() {
        return;
    }
    let _serial = common::serial();
    let o = common::run(&[
        "sweep",
        "tcp",
        "--lab",
        "fe",
        "--sizes",
        "1Ki,2Ki,64Ki,256Ki",
        "--no-perturb",
        "--budget",
        "3s",
        "--quiet",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let goodput = r["link"]["limit_bits_per_s"]
        .as_f64()
        .expect("the link's limit");
    assert!((90e6..100e6).contains(&goodput), "{goodput}");
    let peak = r["summary"]["peak_bits_per_s"].as_f64().unwrap();
    let peak_bytes = r["summary"]["peak_bytes"].as_u64().unwrap();
    assert!(
        peak <= 1.05 * goodput,
        "peak {peak} bit/s at {peak_bytes} B against a goodput of {goodput}"
    );
    assert!(peak_bytes >= 64 << 10, "{peak_bytes}");
    // The link's efficiency is read from the same peak.
    let fraction = r["link"]["peak_fraction"].as_f64().unwrap();
    assert!((fraction - peak / goodput).abs() < 1e-6, "{fraction}");
    // The small sizes stay in the points; when one beat the link, the
    // warning says where the peak was taken from.
    let fastest = r["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["bits_per_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    if fastest > peak {
        let warnings = r["warnings"].to_string();
        assert!(
            warnings.contains("peak taken from 63588 B on"),
            "{warnings}"
        );
    }
}
