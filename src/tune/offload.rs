//! `wulf tune tcp --offloads`: which offload and interrupt-coalescing
//! configurations to measure, the `ethtool` arguments that set and restore
//! them, and whether the driver did what was asked.
//!
//! Bounanos and Fleury 2007's Fig. 1 shows checksum offload and TSO changing latency; seed
//! 002 found drivers deciding results. The factors are the interface's
//! segmentation offloads (TSO, GSO), receive offload (GRO), checksum
//! offload (tx, rx) and interrupt coalescing, each flipped from its state
//! on the interface (one factor at a time from the baseline, like every
//! other factor of `tune`). Whatever the interface is set to when `tune`
//! starts is what it is restored to.
//!
//! Everything here is pure: `wulf tune`'s plan (`plan::offloads`) runs
//! `ethtool` and reads the state back with the ethtool ioctl.

use serde::{Deserialize, Serialize};

use super::plan::{Factor, TuneConfig};
use super::summary::Skipped;
use crate::sys::{Coalesce, Offloads};

/// One setting `--offloads` can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    /// TCP segmentation offload.
    Tso,
    /// Generic segmentation offload.
    Gso,
    /// Generic receive offload.
    Gro,
    /// Transmit checksum offload.
    TxChecksum,
    /// Receive checksum offload.
    RxChecksum,
    /// Interrupt coalescing (`ethtool -C`).
    Coalesce,
}

/// The feature switches, in the order they are measured.
pub const FEATURES: [Setting; 5] = [
    Setting::Tso,
    Setting::Gso,
    Setting::Gro,
    Setting::TxChecksum,
    Setting::RxChecksum,
];

/// Receive coalescing delay tried when the interface interrupts on every
/// frame: a common moderate setting of NIC drivers (e.g. e1000e, ixgbe use
/// tens to a hundred microseconds).
pub const MODERATED_RX_USECS: u32 = 100;

impl Setting {
    /// The name `ethtool -K` takes (`tx`, `rx` for the checksums).
    pub fn ethtool_name(self) -> &'static str {
        match self {
            Setting::Tso => "tso",
            Setting::Gso => "gso",
            Setting::Gro => "gro",
            Setting::TxChecksum => "tx",
            Setting::RxChecksum => "rx",
            Setting::Coalesce => "coalesce",
        }
    }

    /// The name in labels and tables.
    pub fn label(self) -> &'static str {
        match self {
            Setting::TxChecksum => "tx-checksum",
            Setting::RxChecksum => "rx-checksum",
            other => other.ethtool_name(),
        }
    }

    /// This feature's state in `o`; `None` when unreadable (and for
    /// coalescing, which is not a switch).
    pub fn state(self, o: &Offloads) -> Option<bool> {
        match self {
            Setting::Tso => o.tso,
            Setting::Gso => o.gso,
            Setting::Gro => o.gro,
            Setting::TxChecksum => o.tx_checksum,
            Setting::RxChecksum => o.rx_checksum,
            Setting::Coalesce => None,
        }
    }
}

/// What an offload configuration changes on the interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffloadChange {
    /// The interface changed (on this end).
    pub interface: String,
    /// The setting changed.
    pub setting: Setting,
    /// Feature switches: the state set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<bool>,
    /// Coalescing: the values set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coalesce: Option<Coalesce>,
}

/// The offload state of an interface: feature switches and coalescing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffloadState {
    /// Feature switches (`None` where the driver does not answer).
    pub features: Offloads,
    /// Interrupt coalescing; `None` when the driver does not expose it.
    pub coalesce: Option<Coalesce>,
}

/// The `--offloads` record of `tune.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffloadsRecord {
    /// Interface on the route to the peer, on this end.
    pub interface: String,
    /// How settings were changed (`ethtool` and its version).
    pub tool: String,
    /// The state before the first change, restored at the end.
    pub before: OffloadState,
    /// The state read back after restoring.
    pub after: OffloadState,
    /// Whether `after` equals `before`.
    pub restored: bool,
    /// What restoring answered, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_error: Option<String>,
}

/// The coalescing to try from `c`: interrupt on every frame when the
/// interface moderates, else a moderate delay.
pub fn coalesce_target(c: &Coalesce) -> Coalesce {
    let per_frame = c.rx_usecs == 0 && c.rx_max_frames <= 1 && !c.adaptive_rx;
    Coalesce {
        rx_usecs: if per_frame { MODERATED_RX_USECS } else { 0 },
        rx_max_frames: 1,
        adaptive_rx: false,
        ..c.clone()
    }
}

/// The offload configurations for an interface in state `state`, and the
/// settings that cannot be tried (unreadable, so they could not be
/// restored); `coalesce_answer` is what the driver said when asked for its
/// coalescing, when it does not expose it.
pub fn offload_configs(
    interface: &str,
    state: &OffloadState,
    coalesce_answer: Option<&str>,
) -> (Vec<TuneConfig>, Vec<Skipped>) {
    let mut configs = Vec::new();
    let mut skipped = Vec::new();
    let config = |label: String, change: OffloadChange| TuneConfig {
        label,
        factor: Factor::Offload,
        offload: Some(change),
        ..TuneConfig::baseline()
    };
    for s in FEATURES {
        match s.state(&state.features) {
            Some(now) => configs.push(config(
                format!("{} {}", s.label(), if now { "off" } else { "on" }),
                OffloadChange {
                    interface: interface.to_string(),
                    setting: s,
                    on: Some(!now),
                    coalesce: None,
                },
            )),
            None => skipped.push(Skipped {
                label: s.label().to_string(),
                reason: format!("not changeable: {interface} does not report its state"),
            }),
        }
    }
    match &state.coalesce {
        Some(c) => {
            let target = coalesce_target(c);
            configs.push(config(
                format!("coalesce rx-usecs {}", target.rx_usecs),
                OffloadChange {
                    interface: interface.to_string(),
                    setting: Setting::Coalesce,
                    on: None,
                    coalesce: Some(target),
                },
            ))
        }
        None => skipped.push(Skipped {
            label: "coalesce".into(),
            reason: format!(
                "not changeable: the driver of {interface} does not expose interrupt \
                 coalescing ({})",
                coalesce_answer.unwrap_or("no answer")
            ),
        }),
    }
    (configs, skipped)
}

fn on_off(on: bool) -> String {
    if on { "on" } else { "off" }.to_string()
}

/// `ethtool -C` arguments setting every coalescing value of `c`.
fn coalesce_args(interface: &str, c: &Coalesce) -> Vec<String> {
    let mut v = vec!["-C".to_string(), interface.to_string()];
    v.extend(
        [
            ("adaptive-rx", on_off(c.adaptive_rx)),
            ("adaptive-tx", on_off(c.adaptive_tx)),
            ("rx-usecs", c.rx_usecs.to_string()),
            ("rx-frames", c.rx_max_frames.to_string()),
            ("tx-usecs", c.tx_usecs.to_string()),
            ("tx-frames", c.tx_max_frames.to_string()),
        ]
        .into_iter()
        .flat_map(|(k, v)| [k.to_string(), v]),
    );
    v
}

/// The `ethtool` arguments that make `change`.
pub fn set_args(change: &OffloadChange) -> Vec<String> {
    match (&change.coalesce, change.on) {
        (Some(c), _) => coalesce_args(&change.interface, c),
        (None, on) => vec![
            "-K".into(),
            change.interface.clone(),
            change.setting.ethtool_name().into(),
            on_off(on.unwrap_or(true)),
        ],
    }
}

/// The `ethtool` commands (argument lists) that bring `interface` from
/// `now` back to `before`: one `-K` with every feature that differs (set
/// together, so dependencies such as TSO on tx checksumming resolve), and
/// one `-C` when coalescing differs. Empty when nothing differs.
pub fn restore_args(
    interface: &str,
    before: &OffloadState,
    now: &OffloadState,
) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut k = vec!["-K".to_string(), interface.to_string()];
    for s in FEATURES {
        if let (Some(b), n) = (s.state(&before.features), s.state(&now.features)) {
            if n != Some(b) {
                k.push(s.ethtool_name().into());
                k.push(on_off(b));
            }
        }
    }
    if k.len() > 2 {
        out.push(k);
    }
    if let Some(c) = &before.coalesce {
        if now.coalesce.as_ref() != Some(c) {
            out.push(coalesce_args(interface, c));
        }
    }
    out
}

/// Whether the interface, read back as `now`, is in the state `change`
/// asked for; when not, what the driver did instead.
pub fn applied(change: &OffloadChange, now: &OffloadState) -> Result<(), String> {
    match (&change.coalesce, change.on) {
        (Some(want), _) => match &now.coalesce {
            Some(c) if c.rx_usecs == want.rx_usecs && c.adaptive_rx == want.adaptive_rx => Ok(()),
            Some(c) => Err(format!(
                "the driver accepted it but kept rx-usecs {} (adaptive-rx {})",
                c.rx_usecs,
                on_off(c.adaptive_rx)
            )),
            None => Err("coalescing could not be read back".into()),
        },
        (None, want) => match change.setting.state(&now.features) {
            got if got == want => Ok(()),
            Some(got) => Err(format!(
                "the driver accepted it but kept {} {}",
                change.setting.label(),
                on_off(got)
            )),
            None => Err("the state could not be read back".into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn veth() -> OffloadState {
        OffloadState {
            features: Offloads {
                tso: Some(true),
                gso: Some(true),
                gro: Some(false),
                lro: Some(false),
                rx_checksum: Some(true),
                tx_checksum: Some(true),
                scatter_gather: Some(true),
            },
            coalesce: None,
        }
    }

    #[test]
    fn every_readable_feature_is_flipped_and_coalescing_skipped_when_absent() {
        let (c, s) = offload_configs("v0", &veth(), Some("Operation not supported"));
        let labels: Vec<&str> = c.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "tso off",
                "gso off",
                "gro on",
                "tx-checksum off",
                "rx-checksum off"
            ]
        );
        assert!(c.iter().all(|c| c.factor == Factor::Offload));
        assert_eq!(s.len(), 1);
        assert!(s[0].reason.contains("Operation not supported"), "{s:?}");
        let mut unreadable = veth();
        unreadable.features.gso = None;
        let (c, s) = offload_configs("v0", &unreadable, None);
        assert_eq!(c.len(), 4);
        assert_eq!(s[0].label, "gso");
    }

    #[test]
    fn coalescing_goes_to_per_frame_or_to_a_moderate_delay() {
        let moderated = Coalesce {
            rx_usecs: 50,
            adaptive_rx: true,
            ..Coalesce::default()
        };
        let t = coalesce_target(&moderated);
        assert_eq!((t.rx_usecs, t.rx_max_frames, t.adaptive_rx), (0, 1, false));
        let t = coalesce_target(&Coalesce::default());
        assert_eq!(t.rx_usecs, MODERATED_RX_USECS);
        let mut s = veth();
        s.coalesce = Some(moderated);
        let (c, _) = offload_configs("eth0", &s, None);
        let last = c.last().unwrap();
        assert_eq!(last.label, "coalesce rx-usecs 0");
        let args = set_args(last.offload.as_ref().unwrap());
        assert_eq!(&args[..2], ["-C", "eth0"]);
        assert!(args.windows(2).any(|w| w == ["rx-usecs", "0"]), "{args:?}");
    }

    #[test]
    fn set_and_restore_arguments() {
        let (c, _) = offload_configs("v0", &veth(), None);
        assert_eq!(
            set_args(c[0].offload.as_ref().unwrap()),
            ["-K", "v0", "tso", "off"]
        );
        assert_eq!(
            set_args(c[3].offload.as_ref().unwrap()),
            ["-K", "v0", "tx", "off"]
        );
        // Turning tx checksumming off took TSO with it: both come back in
        // one command.
        let mut now = veth();
        now.features.tx_checksum = Some(false);
        now.features.tso = Some(false);
        assert_eq!(
            restore_args("v0", &veth(), &now),
            vec![vec!["-K", "v0", "tso", "on", "tx", "on"]]
        );
        assert!(restore_args("v0", &veth(), &veth()).is_empty());
        let mut before = veth();
        before.coalesce = Some(Coalesce::default());
        now = before.clone();
        now.coalesce = Some(coalesce_target(&Coalesce::default()));
        let r = restore_args("v0", &before, &now);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0][0], "-C");
    }

    #[test]
    fn a_change_the_driver_ignored_is_told() {
        let (c, _) = offload_configs("v0", &veth(), None);
        let tso_off = c[0].offload.as_ref().unwrap();
        let mut now = veth();
        assert!(applied(tso_off, &now).unwrap_err().contains("kept tso on"));
        now.features.tso = Some(false);
        assert!(applied(tso_off, &now).is_ok());
    }
}
