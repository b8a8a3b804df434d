//! `wulf completions` and `wulf manpages`: the command line's own clap
//! definition written out for shells and for man, so that neither can
//! drift from the options wulf really takes. The Debian package ships
//! both (scripts/build-deb generates them from the binary it packages).

use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManpagesArgs};

/// Run `wulf completions SHELL`: the script on standard output.
pub fn completions(args: &CompletionsArgs) -> Result<()> {
    write_stdout(&completion_script(args.shell))
}

/// The completion script of `shell` for the `wulf` command.
pub fn completion_script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "wulf", &mut out);
    out
}

/// Run `wulf manpages DIR`: wulf.1 and one page per visible subcommand.
pub fn manpages(args: &ManpagesArgs) -> Result<()> {
    let written = write_manpages(&args.dir)?;
    println!("{} man pages in {}", written.len(), args.dir.display());
    Ok(())
}

/// Write the man pages into `dir` (created when missing) and return their
/// file names. Hidden internal commands (agent, worker, npb-rank) get no
/// page: users never type them.
pub fn write_manpages(dir: &Path) -> Result<Vec<String>> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create directory {}", dir.display()))?;
    clap_mangen::generate_to(Cli::command(), dir)
        .with_context(|| format!("cannot write the man pages into {}", dir.display()))?;
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("wulf") && n.ends_with(".1"))
        .collect();
    names.sort();
    Ok(names)
}

/// Standard output may be a closed pipe (`wulf completions bash | head`):
/// that is the reader's choice, not an error worth a message.
fn write_stdout(bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|_| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write to standard output"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shell_completes_subcommands_and_options() {
        use clap::ValueEnum;
        for shell in clap_complete::Shell::value_variants() {
            let script = String::from_utf8(completion_script(*shell)).unwrap();
            // Without dashes: fish names long options as `-l budget`.
            for word in ["sweep", "matrix", "openmetrics", "budget"] {
                assert!(script.contains(word), "{shell}: no {word}");
            }
        }
    }

    #[test]
    fn every_visible_subcommand_gets_a_page() {
        let dir = tempfile::tempdir().unwrap();
        let names = write_manpages(dir.path()).unwrap();
        for page in [
            "wulf.1",
            "wulf-sweep.1",
            "wulf-run.1",
            "wulf-report.1",
            "wulf-tune-tcp.1",
        ] {
            assert!(names.iter().any(|n| n == page), "{page} missing: {names:?}");
        }
        assert!(!names
            .iter()
            .any(|n| n.contains("agent") || n.contains("worker")));
        let sweep = std::fs::read_to_string(dir.path().join("wulf-sweep.1")).unwrap();
        assert!(
            sweep.starts_with(".ie"),
            "{}",
            &sweep[..80.min(sweep.len())]
        );
        assert!(sweep.contains("budget"));
    }
}
