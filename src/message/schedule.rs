//! Message-size schedules.
//!
//! NetPIPE's schedule: base sizes 1, 2, 3, 4, 6, 8, 12, then every power of
//! two 2^k and every 3 * 2^(k-1) from 16 on, each of the latter also minus
//! and plus 3 bytes ("perturbations"), which expose drop-outs at buffer,
//! page and MTU boundaries that powers of two hide. From 1 B to 8 MiB that
//! is 124 points, about six per octave.

use crate::units::parse_bytes;

/// Largest size of the default schedule (8 MiB).
pub const DEFAULT_MAX_BYTES: u64 = 8 << 20;

/// Most sizes one sweep measures (`--sizes` refuses more). The schedule
/// from 1 B to 2^50 B is about 300 sizes; a result holds at most this many
/// points, so that its analysis (some steps are quadratic in the points
/// within a bounded window) and `wulf compare` stay quick.
pub const MAX_SIZES: usize = 4096;

/// Perturbation added and subtracted around each base size from 16 B on.
pub const PERTURBATION_BYTES: u64 = 3;

/// NetPIPE's schedule for base sizes in `[min, max]`. With `perturb`, each
/// base from 16 B on also gets base - 3 and base + 3 (so the top point may
/// exceed `max` by 3 bytes, as NetPIPE's does).
pub fn netpipe(min_bytes: u64, max_bytes: u64, perturb: bool) -> Vec<u64> {
    let mut out = Vec::new();
    for base in base_sizes(max_bytes) {
        if base < min_bytes {
            continue;
        }
        if perturb && base >= 16 {
            out.extend([base - PERTURBATION_BYTES, base, base + PERTURBATION_BYTES]);
        } else {
            out.push(base);
        }
    }
    out.retain(|&b| b >= min_bytes.max(1));
    out.sort_unstable();
    out.dedup();
    out
}

fn base_sizes(max_bytes: u64) -> Vec<u64> {
    let mut bases = vec![1u64, 2, 3, 4, 6, 8, 12];
    let mut p = 16u64;
    while p <= max_bytes {
        bases.push(p);
        let three_halves = p + p / 2; // 3 * 2^(k-1) sits between 2^k and 2^(k+1)
        if three_halves <= max_bytes {
            bases.push(three_halves);
        }
        match p.checked_mul(2) {
            Some(next) => p = next,
            None => break,
        }
    }
    bases.retain(|&b| b <= max_bytes);
    bases
}

/// Parse `--sizes`: a comma-separated list (`1,64,1Ki`) or a range
/// `MIN:MAX` that takes the schedule's points in that range.
pub fn parse_sizes(text: &str, perturb: bool) -> Result<Vec<u64>, String> {
    if let Some((lo, hi)) = text.split_once(':') {
        let lo = parse_bytes(lo)?;
        let hi = parse_bytes(hi)?;
        if lo == 0 || lo > hi {
            return Err(format!(
                "'{text}': a range needs 1 <= MIN <= MAX (example: 1:64Ki)"
            ));
        }
        let mut v = netpipe(lo, hi, perturb);
        v.retain(|&b| b <= hi);
        if v.is_empty() {
            v.push(lo);
        }
        return Ok(v);
    }
    let mut v = text
        .split(',')
        .map(|s| parse_bytes(s.trim()))
        .collect::<Result<Vec<u64>, String>>()?;
    if v.contains(&0) {
        return Err("message sizes must be at least 1 byte".into());
    }
    v.sort_unstable();
    v.dedup();
    if v.len() > MAX_SIZES {
        return Err(format!(
            "{} sizes: a sweep measures at most {MAX_SIZES}",
            v.len()
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_schedule_matches_netpipe() {
        let s = netpipe(1, DEFAULT_MAX_BYTES, true);
        assert_eq!(s.len(), 124);
        assert_eq!(&s[..13], &[1, 2, 3, 4, 6, 8, 12, 13, 16, 19, 21, 24, 27]);
        assert_eq!(s[s.len() - 3..], [(8 << 20) - 3, 8 << 20, (8 << 20) + 3]);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn without_perturbation() {
        let s = netpipe(1, 64, false);
        assert_eq!(s, vec![1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]);
    }

    #[test]
    fn size_lists_and_ranges() {
        assert_eq!(parse_sizes("64,1,1Ki", true), Ok(vec![1, 64, 1024]));
        assert_eq!(
            parse_sizes("16:32", true),
            Ok(vec![16, 19, 21, 24, 27, 29, 32])
        );
        assert_eq!(parse_sizes("16:32", false), Ok(vec![16, 24, 32]));
        assert_eq!(parse_sizes("5:5", true), Ok(vec![5]));
        assert!(parse_sizes("0", true).is_err());
        assert!(parse_sizes("64:1", true).is_err());
        assert!(parse_sizes("1:x", true).is_err());
    }
}
