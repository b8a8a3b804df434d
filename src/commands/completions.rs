//! `wulf completions` and `wulf manpages`: the command line's own clap
//! definition written out for shells and for man, so that neither can
//! drift from the options wulf really takes. The Debian package ships
//! both (scripts/build-deb generates them from the binary it packages).
//! Neither shows the hidden internals (`agent`, `worker`, `npb-rank`,
//! `--in-lab`): wulf starts those itself, users never type them. The man
//! pages add what clap knows nothing of: EXAMPLES, EXIT STATUS,
//! ENVIRONMENT and FILES ([`man_sections`]).

mod man_sections;

use std::path::Path;

use anyhow::{Context, Result};
use clap::{Command, CommandFactory};

use crate::cli::{Cli, CompletionsArgs, ManpagesArgs};

/// Run `wulf completions SHELL`: the script on standard output.
pub fn completions(args: &CompletionsArgs) -> Result<()> {
    write_stdout(&completion_script(args.shell))
}

/// The completion script of `shell` for the `wulf` command.
pub fn completion_script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut visible(Cli::command()), "wulf", &mut out);
    out
}

/// `cmd` without its hidden subcommands and options, at every level.
/// clap's completion generators list hidden subcommands and options (only
/// the man page generator leaves them out), and clap has no way to remove
/// one, so the command is rebuilt from what is visible: names, help,
/// arguments and argument groups, which is all a completion script uses.
pub fn visible(cmd: Command) -> Command {
    let mut out = Command::new(leak(cmd.get_name())).disable_help_subcommand(true);
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    if let Some(about) = cmd.get_long_about() {
        out = out.long_about(about.clone());
    }
    if let Some(v) = cmd.get_version() {
        out = out.version(leak(v));
    }
    let args = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        // clap adds these itself when the command is built.
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .cloned();
    // Groups lose their hidden members too (a derive's group per struct
    // lists all its fields, `serve --once` included).
    let shown: Vec<&clap::Id> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .map(|a| a.get_id())
        .collect();
    let groups = cmd.get_groups().map(|g| {
        let members = g
            .get_args()
            .filter(|id| shown.contains(id))
            .map(|id| leak(id.as_str()));
        clap::ArgGroup::new(leak(g.get_id().as_str()))
            .args(members)
            .multiple(g.clone().is_multiple())
            .required(g.is_required_set())
    });
    let subcommands = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .map(visible);
    out.args(args).groups(groups).subcommands(subcommands)
}

/// Run `wulf manpages DIR`: wulf.1 and one page per visible subcommand.
pub fn manpages(args: &ManpagesArgs) -> Result<()> {
    let written = write_manpages(&args.dir)?;
    println!("{} man pages in {}", written.len(), args.dir.display());
    Ok(())
}

/// clap takes names as `&'static str` (without its `string` feature);
/// the rebuilt command lives for the rest of a process that writes one
/// script and exits, so its few dozen names are leaked.
fn leak(text: &str) -> &'static str {
    Box::leak(text.to_owned().into_boxed_str())
}

/// Write the man pages into `dir` (created when missing) and return their
/// file names. Hidden internal commands (agent, worker, npb-rank) get no
/// page: users never type them. Each page is clap_mangen's rendering of
/// the command followed by wulf's own sections ([`man_sections::render`]).
pub fn write_manpages(dir: &Path) -> Result<Vec<String>> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create directory {}", dir.display()))?;
    // As clap_mangen::generate_to does: built, so that subcommands know
    // their display names (wulf-tune-tcp).
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut names = Vec::new();
    write_pages(cmd, dir, &mut names)
        .with_context(|| format!("cannot write the man pages into {}", dir.display()))?;
    names.sort();
    Ok(names)
}

/// The page of `cmd` and of each of its visible subcommands, recursively.
fn write_pages(cmd: Command, dir: &Path, names: &mut Vec<String>) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
        write_pages(sub, dir, names)?;
    }
    let man = clap_mangen::Man::new(cmd);
    let name = man.get_filename();
    let mut page = Vec::new();
    man.render(&mut page)?;
    page.extend_from_slice(man_sections::render(name.trim_end_matches(".1")).as_bytes());
    crate::result::write_atomically(&dir.join(&name), &page)?;
    names.push(name);
    Ok(())
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

    #[test]
    fn completions_leave_the_hidden_internals_out() {
        use clap::ValueEnum;
        fn no_hidden(cmd: &Command) {
            assert!(!cmd.is_hide_set(), "{} is hidden", cmd.get_name());
            assert!(
                cmd.get_arguments().all(|a| !a.is_hide_set()),
                "{}",
                cmd.get_name()
            );
            cmd.get_subcommands().for_each(no_hidden);
        }
        let mut cmd = visible(Cli::command());
        cmd.build();
        no_hidden(&cmd);
        for shell in clap_complete::Shell::value_variants() {
            let script = String::from_utf8(completion_script(*shell)).unwrap();
            // As each shell's script names a subcommand or an option.
            for word in [
                "npb-rank",
                "in-lab",
                "wulf__agent",
                "wulf__worker",
                "'agent:",
                "\"agent\"",
                "'worker:",
                "\"worker\"",
                "agent)",
                "worker)",
            ] {
                assert!(!script.contains(word), "{shell} completes {word}");
            }
            // What is visible is still there, options of subcommands too.
            for word in ["serve", "tune", "tcp", "offloads", "allow-lean"] {
                assert!(script.contains(word), "{shell}: no {word}");
            }
        }
    }

    #[test]
    fn the_pages_name_every_wulf_variable_of_the_source() {
        fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    sources(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        let mut files = Vec::new();
        sources(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut files,
        );
        let listed: String = man_sections::ENVIRONMENT
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(" ");
        let mut found = 0;
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for (i, _) in text.match_indices("\"WULF_") {
                let name: String = text[i + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                // A unit test's stand-in and the adapter's C constants.
                if name == "WULF_"
                    || name == "WULF_UNRELATED_TEST_VAR"
                    || name.starts_with("WULF_E_")
                {
                    continue;
                }
                found += 1;
                let whole = listed.split([' ', ',']).any(|w| w == name);
                assert!(
                    whole,
                    "{name} ({}) is not in the man pages' ENVIRONMENT",
                    f.display()
                );
            }
        }
        assert!(
            found >= 10,
            "only {found} variables found: is the scan broken?"
        );
    }

    #[test]
    fn pages_carry_examples_exit_status_environment_and_files() {
        let dir = tempfile::tempdir().unwrap();
        write_manpages(dir.path()).unwrap();
        let page = std::fs::read_to_string(dir.path().join("wulf-serve.1")).unwrap();
        for section in [
            ".SH EXAMPLES",
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH FILES",
        ] {
            assert!(page.contains(section), "wulf-serve.1: no {section}");
        }
        assert!(page.contains("WULF_SECRET"));
        assert!(!page.contains("in\\-lab") && !page.contains("in-lab"));
    }
}
