//! `wulf study layers`' rows: on each path, every transport that says it
//! sits there (`Transport::layering`), the bottom first, each with the
//! transport beneath it ([`crate::study::layers`]).

use anyhow::Result;

use crate::error::usage;
use crate::lab::LinkRate;
use crate::study::layers::LayersGroup;
use crate::transport::{Layering, LayersPath, Transport};

/// The groups of the study: the loopback and shared memory on this
/// machine, and `link` between two lab nodes when given; `only` keeps
/// those rows (each must be in the study on some path, and a row whose
/// transport beneath is left out has no overhead).
pub fn groups(link: Option<&LinkRate>, only: Option<&[String]>) -> Result<Vec<LayersGroup>> {
    // A study takes no MPI options: its MPIs are the ones found here.
    let registry = crate::transport::registry(&Default::default());
    let local = |name: &str| LinkRate {
        name: name.into(),
        bits_per_s: 0,
    };
    let mut paths = vec![
        (
            LayersPath::Loopback,
            local(LayersPath::Loopback.name()),
            true,
        ),
        (
            LayersPath::SharedMemory,
            local(LayersPath::SharedMemory.name()),
            true,
        ),
    ];
    if let Some(l) = link {
        paths.push((LayersPath::Link, l.clone(), false));
    }
    let mut out = Vec::new();
    for (path, link, local) in paths {
        let rows = rows_on(&registry, path, only);
        if !rows.is_empty() {
            out.push(LayersGroup { link, local, rows });
        }
    }
    if let Some(list) = only {
        for t in list {
            if !out.iter().any(|g| g.rows.iter().any(|(n, _)| n == t)) {
                return Err(usage(format!(
                    "--only: '{t}' is not in the layers study (its rows: {})",
                    all_rows(&registry).join(", ")
                )));
            }
        }
    }
    Ok(out)
}

/// The rows on `path`: the bottom first, then the others in the
/// registry's order; those of `only` when given.
fn rows_on(
    registry: &[Box<dyn Transport>],
    path: LayersPath,
    only: Option<&[String]>,
) -> Vec<(String, Option<String>)> {
    let wanted = |t: &dyn Transport| only.is_none_or(|o| o.iter().any(|n| n == t.name()));
    let placed: Vec<(&str, Layering)> = registry
        .iter()
        .filter(|t| wanted(t.as_ref()))
        .filter_map(|t| Some((t.name(), t.layering(path)?)))
        .collect();
    // Each row after the one beneath it: by depth, the registry's order
    // within a depth (a chain longer than the rows is a loop: last).
    let depth = |mut l: Layering| {
        let mut d = 0;
        while let Layering::Over(o) = l {
            d += 1;
            match placed.iter().find(|(n, _)| *n == o) {
                Some(&(_, next)) if d <= placed.len() => l = next,
                _ => break,
            }
        }
        d
    };
    let mut ordered = placed.clone();
    ordered.sort_by_key(|&(_, l)| depth(l));
    ordered
        .into_iter()
        .map(|(name, l)| {
            let over = match l {
                Layering::Bottom => None,
                Layering::Over(o) => Some(o.to_string()),
            };
            (name.to_string(), over)
        })
        .collect()
}

/// Every transport in the study on some path, for a usage error.
fn all_rows(registry: &[Box<dyn Transport>]) -> Vec<String> {
    let paths = [
        LayersPath::Loopback,
        LayersPath::SharedMemory,
        LayersPath::Link,
    ];
    registry
        .iter()
        .filter(|t| paths.iter().any(|p| t.layering(*p).is_some()))
        .map(|t| t.name().to_string())
        .collect()
}
