//! Reading result files for the commands that draw or compare them
//! (`wulf report`, `wulf compare`), stopping at the first signal.

use std::path::PathBuf;

use anyhow::Result;

use crate::result::{read_any_kind, AnyResult, SweepResult, NPB_KIND, SWEEP_KIND};

/// Read every result file, failing on the first that is unreadable or not a
/// result of this schema (the error names the file).
pub fn read_results(paths: &[PathBuf]) -> Result<Vec<SweepResult>> {
    paths
        .iter()
        .map(|p| {
            stop_if_interrupted()?;
            let read = read_any_kind(p);
            match read.kind.as_deref() {
                Some(NPB_KIND) => {
                    return Err(crate::error::usage(format!(
                        "{} is an NPB result: this command takes sweep results \
                         (`wulf report` draws NPB results)",
                        p.display()
                    )))
                }
                Some(kind) if kind != SWEEP_KIND => {
                    anyhow::bail!(
                        "{} is a wulf {kind:?} result, not a sweep result",
                        p.display()
                    )
                }
                _ => {}
            }
            match read.result? {
                AnyResult::Sweep(r) => Ok(*r),
                other => anyhow::bail!(
                    "{} is a wulf {:?} result, not a sweep result",
                    p.display(),
                    other.kind()
                ),
            }
        })
        .collect()
}

/// The interrupted error (exit 130) once Ctrl-C or SIGTERM came: reading
/// and drawing save nothing, so the first signal ends them at the next
/// check (a `wulf report` of a large file once ran to its end through
/// SIGTERM). The readers and the analysis stop their long loops on the
/// same flag (`exec::interrupted`), leaving figures this check discards.
pub fn stop_if_interrupted() -> Result<()> {
    if crate::exec::interrupted() {
        return Err(crate::error::WulfError::Interrupted.into());
    }
    Ok(())
}
