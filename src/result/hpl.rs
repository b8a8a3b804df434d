//! The result of `wulf hpl`: one run of the real HPL (inside HPC
//! Challenge, Debian's `hpcc`) over the interconnect, with what it was
//! asked (N, NB, P x Q), what it gave (Gflop/s, time, HPL's own residual
//! check) and where it ran. HPCC's other figures (PTRANS, DGEMM, STREAM,
//! RandomAccess, FFT, b_eff) come along in `hpcc` with `--hpcc-all`.
//!
//! The figures are HPCC's own summary lines (`HPL_Tflops=...`), parsed,
//! never recomputed: the point of the command is the real benchmark.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::result::LabPlacement;
use crate::sys::Host;

/// Version of the HPL result schema.
pub const HPL_SCHEMA_VERSION: u32 = 1;

/// The value of [`HplResult::kind`].
pub const HPL_KIND: &str = "hpl";

/// One `wulf hpl` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HplResult {
    /// Always [`HPL_KIND`].
    pub kind: String,
    /// [`HPL_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The wulf that ran it.
    pub tool_version: String,
    /// wulf's own command line.
    pub command_line: Vec<String>,
    /// Start, RFC 3339.
    pub started_at: String,
    /// Wall time of the whole command, seconds.
    pub wall_s: f64,
    /// The launching machine.
    pub host: Host,
    /// MPI processes.
    pub np: usize,
    /// Problem size: the order of the matrix.
    pub n: usize,
    /// HPL's block size.
    pub nb: usize,
    /// Process rows.
    pub p: usize,
    /// Process columns.
    pub q: usize,
    /// How `n` was chosen: `given`, or the share of memory it fills.
    pub n_from: String,
    /// HPL's rate, Gflop/s (HPCC's `HPL_Tflops` x 1000).
    pub gflops: f64,
    /// HPL's time for the solve, seconds (`HPL_time`).
    pub time_s: f64,
    /// HPL's scaled residual `||Ax-b||_oo / (eps (||A||_oo ||x||_oo +
    /// ||b||_oo) N)`.
    pub scaled_residual: f64,
    /// Whether HPL's own check passed (the residual below its threshold,
    /// 16): a run that fails it is an error (exit 1), saved with `passed`
    /// false.
    pub passed: bool,
    /// The launcher's command line.
    pub launcher_command: Vec<String>,
    /// When the processes ran one per node of a lab: the lab and its links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<LabPlacement>,
    /// With `--hpcc-all`: every `KEY=VALUE` line of HPCC's summary.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hpcc: BTreeMap<String, String>,
}

/// The `KEY=VALUE` lines between HPCC's "Begin of Summary section." and
/// "End of Summary section." markers.
pub fn parse_hpcc_summary(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .skip_while(|l| !l.starts_with("Begin of Summary section"))
        .skip(1)
        .take_while(|l| !l.starts_with("End of Summary section"))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// HPL's scaled residual and verdict from its line
/// `||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=  0.0072 ...... PASSED`.
pub fn parse_residual(text: &str) -> Option<(f64, bool)> {
    let line = text
        .lines()
        .find(|l| l.starts_with("||Ax-b||_oo/(eps*") && l.contains(")="))?;
    let (_, rest) = line.rsplit_once(")=")?;
    let mut words = rest.split_whitespace();
    let value: f64 = words.next()?.parse().ok()?;
    let verdict = words.last()?;
    Some((value, verdict == "PASSED"))
}

/// The process grid HPL should use for `np` processes: P x Q = np with P
/// the largest divisor not above sqrt(np) (near square, P <= Q, as HPL's
/// tuning notes advise).
pub fn grid(np: usize) -> (usize, usize) {
    let p = (1..=np)
        .take_while(|p| p * p <= np)
        .filter(|p| np.is_multiple_of(*p))
        .last()
        .unwrap_or(1);
    (p, np / p)
}

/// The largest N, a multiple of `nb`, whose matrix (8 N^2 bytes) fills at
/// most `fraction` of `memory_bytes`; at least `nb`.
pub fn n_for_memory(memory_bytes: u64, fraction: f64, nb: usize) -> usize {
    let n = ((memory_bytes as f64 * fraction / 8.0).sqrt() as usize / nb) * nb;
    n.max(nb)
}

/// Oldest HPL result schema this wulf reads.
pub const HPL_OLDEST_SCHEMA_VERSION: u32 = 1;

/// An HPL result from its text (the header already read by the reader of
/// every kind): strict decoding, then the checks a file from anywhere
/// must pass before a report draws it.
pub(super) fn hpl_from(
    h: &super::read::Header,
    text: &str,
    origin: &str,
) -> anyhow::Result<HplResult> {
    let r: HplResult = super::read::versioned_from(
        h,
        text,
        origin,
        "hpl",
        HPL_OLDEST_SCHEMA_VERSION..=HPL_SCHEMA_VERSION,
    )?;
    check(&r).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    Ok(r)
}

/// What a report relies on: a finite, non-negative rate and time, a grid
/// that is the process count, sizes that are not zero.
fn check(r: &HplResult) -> Result<(), String> {
    if r.kind != HPL_KIND {
        return Err(format!("kind is {:?}, not {HPL_KIND:?}", r.kind));
    }
    for (name, v) in [
        ("gflops", r.gflops),
        ("time_s", r.time_s),
        ("scaled_residual", r.scaled_residual),
        ("wall_s", r.wall_s),
    ] {
        if !v.is_finite() || v < 0.0 {
            return Err(format!("{name} is {v}, not a finite figure >= 0"));
        }
    }
    if r.np == 0 || r.n == 0 || r.nb == 0 {
        return Err("np, n and nb must be at least 1".into());
    }
    if r.p.checked_mul(r.q) != Some(r.np) {
        return Err(format!("P x Q = {} x {} is not np = {}", r.p, r.q, r.np));
    }
    Ok(())
}

/// The link kind an HPL run crossed, for reports and the Linpack study:
/// the lab's link name (with `hub` for a shared medium), or `local` for a
/// run on one machine without a lab.
pub fn link_kind(r: &HplResult) -> String {
    match &r.lab {
        None => "local".into(),
        Some(lab) => {
            let link = lab
                .links
                .first()
                .map(|l| l.link.clone())
                .unwrap_or_else(|| "lab".into());
            match lab.medium.as_deref() {
                Some(m) => format!("{link} {m}"),
                None => link,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "\
T/V                N    NB     P     Q               Time                 Gflops
--------------------------------------------------------------------------------
WR11C2R4        1000    80     1     2               0.77              8.671e-01
--------------------------------------------------------------------------------
||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=        0.0072510 ...... PASSED
Begin of Summary section.
VersionMajor=1
HPL_Tflops=0.000867078
HPL_time=0.769
HPL_N=1000
End of Summary section.
";

    #[test]
    fn hpcc_s_summary_and_residual_are_read() {
        let s = parse_hpcc_summary(OUT);
        assert_eq!(s["HPL_Tflops"], "0.000867078");
        assert_eq!(s["HPL_N"], "1000");
        assert_eq!(s.len(), 4);
        assert_eq!(parse_residual(OUT), Some((0.007251, true)));
        let failed = OUT.replace("PASSED", "FAILED");
        assert_eq!(parse_residual(&failed), Some((0.007251, false)));
        assert_eq!(parse_residual("nothing"), None);
    }

    #[test]
    fn a_result_round_trips_and_unknown_fields_are_refused() {
        let r = HplResult {
            kind: HPL_KIND.into(),
            schema_version: HPL_SCHEMA_VERSION,
            tool_version: "0".into(),
            command_line: vec!["wulf".into(), "hpl".into()],
            started_at: "2026-11-27T12:00:00Z".into(),
            wall_s: 11.2,
            host: Host::probe(),
            np: 2,
            n: 1000,
            nb: 80,
            p: 1,
            q: 2,
            n_from: "given".into(),
            gflops: 1.08,
            time_s: 0.62,
            scaled_residual: 0.0073,
            passed: true,
            launcher_command: vec!["mpirun".into()],
            lab: None,
            hpcc: BTreeMap::new(),
        };
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<HplResult>(&text).unwrap(), r);
        let extra = text.replacen('{', r#"{"surprise":1,"#, 1);
        let e = serde_json::from_str::<HplResult>(&extra).unwrap_err();
        assert!(e.to_string().contains("surprise"), "{e}");
    }

    #[test]
    fn checks_refuse_what_a_report_cannot_draw() {
        let text = r#"{"kind":"hpl","schema_version":1,"tool_version":"0","command_line":[],
            "started_at":"x","wall_s":1,"host":HOST,"np":2,"n":600,"nb":60,"p":1,"q":2,
            "n_from":"given","gflops":1.5,"time_s":0.1,"scaled_residual":0.01,"passed":true,
            "launcher_command":[]}"#
            .replace("HOST", &serde_json::to_string(&Host::probe()).unwrap());
        let mut r: HplResult = serde_json::from_str(&text).unwrap();
        assert_eq!(check(&r), Ok(()));
        assert_eq!(link_kind(&r), "local");
        r.q = 3;
        assert!(check(&r).unwrap_err().contains("P x Q"));
        r.q = 2;
        r.gflops = f64::NAN;
        assert!(check(&r).unwrap_err().contains("gflops"));
    }

    #[test]
    fn grids_are_near_square_and_sizes_fit_memory() {
        assert_eq!(grid(1), (1, 1));
        assert_eq!(grid(2), (1, 2));
        assert_eq!(grid(4), (2, 2));
        assert_eq!(grid(6), (2, 3));
        assert_eq!(grid(7), (1, 7));
        assert_eq!(grid(16), (4, 4));
        // 8 GiB at 10%: sqrt(0.1 * 8 Gi / 8) = 10,362, down to 80's multiple.
        let n = n_for_memory(8 << 30, 0.1, 80);
        assert_eq!(n, 10_320);
        assert!(8 * (n as u64).pow(2) <= (8u64 << 30) / 10);
        assert_eq!(n_for_memory(1, 0.1, 80), 80);
    }
}
