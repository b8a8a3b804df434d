//! Help texts that list what a registry holds (transports, studies, report
//! formats, named links), built when clap renders them so that a new entry
//! can never be missing from `--help` or the man pages.

use clap::ValueEnum;

use super::{ReportFormat, StudyArg};

/// The names clap gives the variants of a value enum, comma-separated.
fn value_names<T: ValueEnum>() -> String {
    T::value_variants()
        .iter()
        .filter_map(|v| v.to_possible_value())
        .map(|p| p.get_name().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `wulf sweep`'s TRANSPORT, long form: every transport in the registry
/// with its description, then the MPIs, which are found at run time.
pub(super) fn transport_help() -> String {
    // Each name on its own line and its description indented under it:
    // clap wraps a long line back to the line's own indentation.
    let mut text = String::from("Transport, one of:\n");
    for (name, about) in crate::transport::catalogue() {
        text.push_str(&format!("  {name}\n      {about}\n"));
    }
    text.push_str(
        "  mpi:NAME, mpi:NAME(tcp)\n      each MPI found here (mpi:openmpi, mpi:mpich) or given with \
         --mpi, and the same forced onto TCP",
    );
    text
}

/// `wulf study` in `wulf --help`: every study by name.
pub(super) fn study_about() -> String {
    format!(
        "Network studies in the link lab, one command each: {} (`wulf study --help` says what each measures)",
        value_names::<StudyArg>()
    )
}

/// `wulf report` in `wulf --help`: every output format by name.
pub(super) fn report_about() -> String {
    format!(
        "Draw results as an HTML report, or export them: formats {}",
        value_names::<ReportFormat>()
    )
}

/// `wulf lab` in `wulf --help`: the named links and the other rates.
pub(super) fn lab_about() -> String {
    let named: Vec<&str> = crate::lab::spec::NAMED_LINKS
        .iter()
        .map(|(name, _)| *name)
        .collect();
    format!(
        "An emulated cluster on this machine: nodes in network namespaces joined by a switch or a hub, links shaped to {} or any rate tc takes (600mbit)",
        named.join(", ")
    )
}

/// The end of `wulf study --help`: the published studies the studies
/// reproduce, cited in full.
pub(super) fn study_references() -> String {
    let mut text = String::from("References:\n");
    for (key, full) in crate::study::REFERENCES {
        text.push_str(&format!("  {key}: {full}.\n"));
    }
    text
}
