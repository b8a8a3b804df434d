//! `tune.json`: the summary `wulf tune tcp` writes beside the result files
//! of its configurations (schema version [`TUNE_SCHEMA_VERSION`],
//! documented in `docs/tune-schema.md`).
//!
//! The summary holds no trials: those stay in the ordinary result files it
//! names, so `wulf report` and any other reader of results can use them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::bands::{BandBest, Comparison, PointStat};
use super::offload::{OffloadState, OffloadsRecord};
use super::plan::TuneConfig;
use super::recommend::{BandwidthDelay, Recommendation, Rfc1323State};
use crate::result::{Mode, SweepResult};

/// Version of the `tune.json` schema. Bumped on any change a reader must
/// know about.
///
/// 2: `--offloads` (the `offload` factor and configuration field,
/// `offloads`, `applied`) and the whole CPU cost per byte of every
/// configuration; version 1 files read unchanged.
///
/// 3: `--wake-up` (the `wake_up` factor and topic, the configuration's
/// `wake`); versions 1 and 2 read unchanged.
pub const TUNE_SCHEMA_VERSION: u32 = 3;

/// The whole of `tune.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuneSummary {
    /// Version of this schema ([`TUNE_SCHEMA_VERSION`]).
    pub tune_schema_version: u32,
    /// Version of the wulf that measured it.
    pub tool_version: String,
    /// False when the tuning run was cut short (interrupted, or a
    /// configuration failed); what was measured is still summarised.
    pub complete: bool,
    /// Start time, RFC 3339 in UTC.
    pub started_at: String,
    /// Wall time of the whole tuning run in seconds.
    pub wall_s: f64,
    /// Transport tuned (`tcp`).
    pub transport: String,
    /// Pattern of every configuration's sweep.
    pub mode: Mode,
    /// Remote peer `HOST[:PORT]`, null for a local peer.
    pub peer: Option<String>,
    /// Total time budget in seconds, shared by the configurations.
    pub budget_s: f64,
    /// Message sizes every configuration was swept over.
    pub sizes_bytes: Vec<u64>,
    /// One entry per configuration measured, baseline first.
    pub configurations: Vec<ConfigSummary>,
    /// Configurations not measured, and why.
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// The best configuration in each size band.
    pub bands: Vec<BandBest>,
    /// Every configuration against the baseline in every size band.
    pub comparisons: Vec<Comparison>,
    /// Bandwidth-delay product of the path, when it could be computed.
    pub bandwidth_delay: Option<BandwidthDelay>,
    /// RFC 1323 options (window scaling, timestamps) on each host.
    pub rfc1323: Vec<Rfc1323State>,
    /// What to change, most important first.
    pub recommendations: Vec<Recommendation>,
    /// Non-fatal observations (noisy points, failed configurations...).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// `--offloads`: the interface changed, its state before and after,
    /// and whether it was restored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offloads: Option<OffloadsRecord>,
}

/// A configuration that was not measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skipped {
    /// Configuration label, or the factor (`mss`) when none was planned.
    pub label: String,
    /// Why.
    pub reason: String,
}

/// One measured configuration: what was asked, what the kernel granted,
/// and the headline figures of its result file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigSummary {
    /// What was requested.
    pub config: TuneConfig,
    /// The result file, relative to `tune.json`'s directory.
    pub file: String,
    /// Whether the sweep measured every size.
    pub complete: bool,
    /// Why the sweep stopped early, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Settings on the measuring end.
    pub client: EndSettings,
    /// Settings on the peer.
    pub server: EndSettings,
    /// Median one-way time at the smallest size, ns.
    pub latency_ns: Option<f64>,
    /// Highest median throughput, bit/s.
    pub peak_bits_per_s: Option<f64>,
    /// Size where the peak occurs, bytes.
    pub peak_bytes: Option<u64>,
    /// Points measured.
    pub points: u64,
    /// Points marked noisy.
    pub noisy_points: u64,
    /// Whole CPU cost per byte at the peak size (the kernel's busy time,
    /// all CPUs), ns; with `--offloads`, which measures it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole_ns_per_byte: Option<f64>,
    /// getrusage's CPU per byte at the peak size (both ends' measuring
    /// threads), ns, beside the whole cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub getrusage_ns_per_byte: Option<f64>,
    /// Offload configurations: the interface's state read back while it
    /// was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<OffloadState>,
}

/// Socket settings requested and granted on one end, from the result's
/// `options.transport` record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndSettings {
    /// Host name of this end.
    pub host: String,
    /// SO_SNDBUF requested, bytes.
    pub sndbuf_requested_bytes: Option<u64>,
    /// SO_SNDBUF the kernel granted (Linux doubles the request), bytes.
    pub sndbuf_granted_bytes: Option<u64>,
    /// SO_RCVBUF requested, bytes.
    pub rcvbuf_requested_bytes: Option<u64>,
    /// SO_RCVBUF the kernel granted, bytes.
    pub rcvbuf_granted_bytes: Option<u64>,
    /// TCP_MAXSEG requested, bytes.
    pub mss_requested_bytes: Option<u64>,
    /// MSS of the connection (excluding TCP options), bytes.
    pub mss_bytes: Option<u64>,
}

impl EndSettings {
    /// Read the settings a transport recorded (keys written by
    /// `transport::sockopt` and `transport::tcp`); missing keys are unknown.
    pub fn from_record(host: &str, record: &Map<String, Value>) -> EndSettings {
        let get = |k: &str| record.get(k).and_then(Value::as_u64);
        EndSettings {
            host: host.to_string(),
            sndbuf_requested_bytes: get("sndbuf_requested_bytes"),
            sndbuf_granted_bytes: get("sndbuf_granted_bytes"),
            rcvbuf_requested_bytes: get("rcvbuf_requested_bytes"),
            rcvbuf_granted_bytes: get("rcvbuf_granted_bytes"),
            mss_requested_bytes: get("mss_requested_bytes"),
            mss_bytes: get("mss_bytes"),
        }
    }
}

/// A measured configuration with its points, the input of the analysis.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigRun {
    /// The summary as stored in `tune.json`.
    pub summary: ConfigSummary,
    /// Its points, ascending sizes.
    pub points: Vec<PointStat>,
}

impl ConfigRun {
    /// Extract what the analysis needs from a configuration's result.
    pub fn from_result(
        config: &TuneConfig,
        file: &str,
        r: &SweepResult,
        error: Option<String>,
    ) -> ConfigRun {
        let server_record = match r.options.transport.get("server") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        let at_peak = r
            .points
            .iter()
            .find(|p| Some(p.bytes) == r.summary.peak_bytes);
        let whole = at_peak.and_then(|p| p.cpu_whole.as_ref());
        ConfigRun {
            summary: ConfigSummary {
                config: config.clone(),
                file: file.to_string(),
                complete: r.complete,
                error,
                client: EndSettings::from_record(&r.placement.client_host, &r.options.transport),
                server: EndSettings::from_record(&r.placement.server_host, &server_record),
                latency_ns: r.summary.latency_ns,
                peak_bits_per_s: r.summary.peak_bits_per_s,
                peak_bytes: r.summary.peak_bytes,
                points: r.points.len() as u64,
                noisy_points: r.summary.noisy_points,
                whole_ns_per_byte: whole.and_then(|w| w.ns_per_byte),
                getrusage_ns_per_byte: whole.and_then(|w| w.getrusage_ns_per_byte),
                applied: None,
            },
            points: r.points.iter().map(PointStat::of).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn end_settings_read_the_transport_record() {
        let rec = json!({
            "sndbuf_requested_bytes": 65536, "sndbuf_granted_bytes": 131072,
            "rcvbuf_requested_bytes": null, "rcvbuf_granted_bytes": 131072,
            "mss_bytes": 1448, "nodelay": true
        });
        let e = EndSettings::from_record("h", rec.as_object().unwrap());
        assert_eq!(e.host, "h");
        assert_eq!(e.sndbuf_requested_bytes, Some(65536));
        assert_eq!(e.sndbuf_granted_bytes, Some(131072));
        assert_eq!(e.rcvbuf_requested_bytes, None);
        assert_eq!(e.mss_requested_bytes, None);
        assert_eq!(e.mss_bytes, Some(1448));
    }
}
