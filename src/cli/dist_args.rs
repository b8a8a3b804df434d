//! Arguments of the commands that describe the command line itself for
//! the system around wulf: shell completions and man pages.

use std::path::PathBuf;

use clap::Args;

/// `wulf completions`.
#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `wulf manpages`.
#[derive(Debug, Clone, Args)]
pub struct ManpagesArgs {
    /// Directory to write wulf.1 and one page per subcommand
    /// (wulf-sweep.1...) into; created when missing.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}
