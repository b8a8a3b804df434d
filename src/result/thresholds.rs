//! The thresholds a transport records in its settings: the sizes at which
//! it changes how it moves a message. Transports write them, the analysis
//! names drop-outs and switch-overs after them.

/// Key of the list of thresholds in a transport's settings
/// ([`crate::transport::Connected::settings`], a baseline's settings): the sizes at which
/// the transport itself is known to change how it moves a message, each
/// `{"bytes": N, "what": "..."}`. The analysis names a drop-out or
/// switch-over after the one it matches, without knowing which transport
/// spoke (see `analysis::causes`).
pub const THRESHOLDS_KEY: &str = "thresholds";

/// The thresholds list for [`THRESHOLDS_KEY`]: (size, what changes there).
pub fn thresholds_value(list: &[(u64, String)]) -> serde_json::Value {
    list.iter()
        .map(|(bytes, what)| serde_json::json!({ "bytes": bytes, "what": what }))
        .collect()
}

/// A threshold for [`THRESHOLDS_KEY`] that repeats at every multiple of
/// `bytes` (what changes at each).
pub fn periodic_threshold_value(bytes: u64, what: &str) -> serde_json::Value {
    serde_json::json!([{ "bytes": bytes, "every": true, "what": what }])
}

/// Key of a transport's settings saying that it copies each message
/// through the CPU caches (`true`: tcp, c2c, shm), so that a step where a
/// message outgrows a cache level of the machine is named after that level
/// (see `analysis::causes`). Transports that move data otherwise (a NIC's
/// DMA, a single kernel copy counted per page) leave it out.
pub const COPIES_KEY: &str = "copies_through_caches";

/// One threshold entry for [`THRESHOLDS_KEY`]; `every`: it repeats at each
/// multiple of `bytes`.
pub fn threshold_entry(bytes: u64, what: &str, every: bool) -> serde_json::Value {
    match every {
        true => serde_json::json!({ "bytes": bytes, "every": true, "what": what }),
        false => serde_json::json!({ "bytes": bytes, "what": what }),
    }
}
