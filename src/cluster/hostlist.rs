//! Node lists as people write them: `a,b,c`, hostfiles (one host per line,
//! MPI's `slots=` accepted), and Slurm's compact syntax (`node[01-16,20]`),
//! which may appear anywhere a list is taken.
//!
//! The expansion follows Slurm's hostlist rules (`scontrol show hostnames`):
//! a bracket holds comma-separated numbers and ranges, zero padding is kept
//! to the width of the range's first bound, and several brackets in one
//! name multiply out left to right.

use anyhow::{bail, Context, Result};

/// Most hosts one list may expand to: a typo such as `n[1-99999999]` must
/// be an error, not an allocation of gigabytes.
pub const MAX_HOSTS: usize = 100_000;

/// Expand a comma-separated list that may use Slurm's bracket syntax
/// (`node[01-03],gpu1` → node01, node02, node03, gpu1). Duplicates are an
/// error: a node listed twice would be measured against itself.
pub fn expand(text: &str) -> Result<Vec<String>> {
    let mut hosts = Vec::new();
    for item in split_top_level(text)? {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        for h in expand_one(item)? {
            hosts.push(h);
            if hosts.len() > MAX_HOSTS {
                bail!("'{text}' names more than {MAX_HOSTS} hosts");
            }
        }
    }
    check_unique(&hosts)?;
    Ok(hosts)
}

/// Read a hostfile: one host (or compact list) per line; `#` starts a
/// comment; MPI's `slots=N` and other `key=value` words after the name are
/// accepted and ignored (wulf places one process per node).
pub fn read_hostfile(path: &std::path::Path) -> Result<Vec<String>> {
    Ok(read_hostfile_slots(path)?
        .into_iter()
        .map(|(h, _)| h)
        .collect())
}

/// [`read_hostfile`] with each host's `slots=N`, where given (what
/// `wulf npb` places that many ranks on).
pub fn read_hostfile_slots(path: &std::path::Path) -> Result<Vec<(String, Option<usize>)>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the hostfile {}", path.display()))?;
    parse_hostfile_slots(&text).with_context(|| format!("in the hostfile {}", path.display()))
}

/// The hosts of a hostfile's text (see [`read_hostfile`]).
pub fn parse_hostfile(text: &str) -> Result<Vec<String>> {
    Ok(parse_hostfile_slots(text)?
        .into_iter()
        .map(|(h, _)| h)
        .collect())
}

/// The hosts of a hostfile's text with their `slots=N` (see
/// [`read_hostfile_slots`]).
pub fn parse_hostfile_slots(text: &str) -> Result<Vec<(String, Option<usize>)>> {
    let mut hosts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let mut slots = None;
        for word in line.split_whitespace().skip(1) {
            let Some((key, value)) = word.split_once('=') else {
                bail!(
                    "line {}: '{word}' after the host name is not key=value (slots=N)",
                    i + 1
                );
            };
            if key == "slots" {
                slots = Some(
                    value
                        .parse::<usize>()
                        .ok()
                        .filter(|&n| n >= 1)
                        .with_context(|| format!("line {}: slots={value} is not a count", i + 1))?,
                );
            }
        }
        for h in expand_one(name).with_context(|| format!("line {}", i + 1))? {
            hosts.push((h, slots));
        }
        if hosts.len() > MAX_HOSTS {
            bail!("more than {MAX_HOSTS} hosts");
        }
    }
    let names: Vec<String> = hosts.iter().map(|(h, _)| h.clone()).collect();
    check_unique(&names)?;
    Ok(hosts)
}

/// Split at commas outside brackets.
fn split_top_level(text: &str) -> Result<Vec<&str>> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            bail!("'{text}': unbalanced or nested brackets");
        }
    }
    if depth != 0 {
        bail!("'{text}': a '[' is not closed");
    }
    parts.push(&text[start..]);
    Ok(parts)
}

/// Expand one name with zero or more brackets.
fn expand_one(item: &str) -> Result<Vec<String>> {
    let Some(open) = item.find('[') else {
        // The empty tail after a name's last bracket.
        if !item.is_empty() {
            check_name(item)?;
        }
        return Ok(vec![item.to_string()]);
    };
    let close = item[open..]
        .find(']')
        .map(|c| open + c)
        .with_context(|| format!("'{item}': a '[' is not closed"))?;
    let prefix = &item[..open];
    let rest = expand_one(&item[close + 1..])?;
    let mut out = Vec::new();
    for number in expand_bracket(&item[open + 1..close], item)? {
        for tail in &rest {
            out.push(format!("{prefix}{number}{tail}"));
            if out.len() > MAX_HOSTS {
                bail!("'{item}' names more than {MAX_HOSTS} hosts");
            }
        }
    }
    match out.first() {
        Some(first) => check_name(first)?,
        None => bail!("'{item}' names no host"),
    }
    Ok(out)
}

/// The numbers of one bracket's contents, `01-03,7` → 01, 02, 03, 7.
fn expand_bracket(inner: &str, item: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for part in inner.split(',') {
        let part = part.trim();
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let bad = || format!("'{item}': '{part}' is not a number or a range N-M");
        if lo.is_empty() || !lo.bytes().all(|b| b.is_ascii_digit()) {
            bail!(bad());
        }
        let a: u64 = lo.parse().with_context(bad)?;
        let b: u64 = hi.parse().with_context(bad)?;
        if b < a {
            bail!("'{item}': the range {part} runs backwards");
        }
        if b - a >= MAX_HOSTS as u64 {
            bail!("'{item}' names more than {MAX_HOSTS} hosts");
        }
        let width = lo.len();
        out.extend((a..=b).map(|n| format!("{n:0width$}")));
    }
    Ok(out)
}

fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:@".contains(&b));
    if !ok {
        bail!("'{name}' is not a host name");
    }
    Ok(())
}

fn check_unique(hosts: &[String]) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for h in hosts {
        if !seen.insert(h.as_str()) {
            bail!("host {h} is listed twice");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_compact_syntax_expands_like_scontrol() {
        assert_eq!(
            expand("node[01-03,10],gpu1").unwrap(),
            ["node01", "node02", "node03", "node10", "gpu1"]
        );
        assert_eq!(
            expand("r[1-2]n[1-2]").unwrap(),
            ["r1n1", "r1n2", "r2n1", "r2n2"]
        );
        assert_eq!(expand("a, b,c").unwrap(), ["a", "b", "c"]);
        assert_eq!(expand("n[8-11]").unwrap(), ["n8", "n9", "n10", "n11"]);
    }

    #[test]
    fn bad_lists_are_errors() {
        for bad in [
            "n[3-1]",
            "n[1-2",
            "n[a]",
            "n[[1]]",
            "a,a",
            "n[1-99999999]",
            "-oProxyCommand=x",
            "a b",
            "n[]",
        ] {
            assert!(expand(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hostfiles_accept_slots_and_comments() {
        let text = "# cluster\nnode1 slots=4\n\nnode[2-3] slots=2 max_slots=8 # rack 2\n";
        assert_eq!(parse_hostfile(text).unwrap(), ["node1", "node2", "node3"]);
        assert!(parse_hostfile("node1 4\n").is_err());
        assert!(parse_hostfile("node1\nnode1\n").is_err());
        let slots = parse_hostfile_slots(text).unwrap();
        assert_eq!(slots[0], ("node1".to_string(), Some(4)));
        assert_eq!(slots[2], ("node3".to_string(), Some(2)));
        assert_eq!(parse_hostfile_slots("a\n").unwrap()[0].1, None);
        assert!(parse_hostfile_slots("a slots=0\n").is_err());
        assert!(parse_hostfile_slots("a slots=x\n").is_err());
    }
}
