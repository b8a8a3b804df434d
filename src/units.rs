//! Sizes and durations with units, as typed on the command line.
//!
//! Sizes: a plain number is bytes; `K`/`M`/`G` are SI (10^3, 10^6, 10^9) and
//! `Ki`/`Mi`/`Gi` binary (2^10, 2^20, 2^30); a trailing `B` is allowed
//! (`64KiB`). Durations: `500ms`, `10s`, `2m`, `1h` (humantime's grammar);
//! a plain number is seconds.

use std::time::Duration;

/// Parse a byte size such as `4096`, `64K`, `64Ki`, `8MiB`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = t.strip_suffix(['B', 'b']).unwrap_or(t);
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(format!(
            "'{text}' is not a size (examples: 1024, 64K, 64Ki, 8Mi)"
        ));
    }
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{text}' is too large a size"))?;
    let mult: u64 = match unit {
        "" => 1,
        "K" | "k" => 1_000,
        "Ki" | "ki" => 1 << 10,
        "M" | "m" => 1_000_000,
        "Mi" | "mi" => 1 << 20,
        "G" | "g" => 1_000_000_000,
        "Gi" | "gi" => 1 << 30,
        _ => {
            return Err(format!(
                "'{text}': unknown size unit '{unit}' (use K, Ki, M, Mi, G or Gi)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("'{text}' is too large a size"))
}

/// Parse a duration such as `500ms`, `10s`, `2m`; a bare number is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if let Ok(secs) = t.parse::<f64>() {
        // try_: a number of seconds beyond Duration's range (found by
        // fuzzing) is an error, not a panic.
        if let Ok(d) = Duration::try_from_secs_f64(secs) {
            return Ok(d);
        }
    }
    humantime::parse_duration(t)
        .map_err(|e| format!("'{text}' is not a duration ({e}; examples: 500ms, 10s, 2m)"))
}

/// Format a byte count: binary units when exact (`8 MiB`), else bytes (`8388611 B`).
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (name, size) in UNITS {
        if bytes >= size {
            // Sizes off a unit boundary (the +-3 perturbations) are shown
            // exactly: "6.0 KiB" for 6141 bytes would hide the point of them.
            return if bytes.is_multiple_of(size) {
                format!("{} {name}", bytes / size)
            } else {
                format!("{bytes} B")
            };
        }
    }
    format!("{bytes} B")
}

/// Format a time in ns with a readable unit: `812 ns`, `7.31 us`, `1.20 ms`.
pub fn format_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// Format a rate in bit/s with SI units: `912.4 Mbit/s`, `41.3 Gbit/s`.
pub fn format_bits_per_s(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.1} Mbit/s", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{:.1} kbit/s", bps / 1e3)
    } else {
        format!("{bps:.0} bit/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("1"), Ok(1));
        assert_eq!(parse_bytes("64K"), Ok(64_000));
        assert_eq!(parse_bytes("64Ki"), Ok(65_536));
        assert_eq!(parse_bytes("64KiB"), Ok(65_536));
        assert_eq!(parse_bytes("8Mi"), Ok(8 << 20));
        assert_eq!(parse_bytes("2M"), Ok(2_000_000));
        assert_eq!(parse_bytes("1Gi"), Ok(1 << 30));
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("K").is_err());
        assert!(parse_bytes("12X").is_err());
        assert!(parse_bytes("-3").is_err());
        assert!(parse_bytes("99999999999999999999").is_err());
        assert!(parse_bytes("99999999999Gi").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        // Found by fuzzing: beyond Duration's range was a panic.
        assert!(parse_duration("44444444444444444444444444444.0").is_err());
        assert!(parse_duration("1e300").is_err());
        assert!(parse_duration("-1").is_err());
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(format_bytes(13), "13 B");
        assert_eq!(format_bytes(8 << 20), "8 MiB");
        assert_eq!(format_bytes(1539), "1539 B");
        assert_eq!(format_ns(812.0), "812 ns");
        assert_eq!(format_ns(7310.0), "7.31 us");
        assert_eq!(format_bits_per_s(41.3e9), "41.30 Gbit/s");
        assert_eq!(format_bits_per_s(912.44e6), "912.4 Mbit/s");
    }
}
