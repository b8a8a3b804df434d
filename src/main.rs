//! The `wulf` binary: parse, dispatch, map errors to exit codes.

use std::sync::atomic::Ordering;

use clap::Parser;
use wulf::cli::{Cli, Command};
use wulf::commands;

fn main() {
    let cli = Cli::parse();
    install_signal_handler();
    wulf::cluster::orphan::exit_when_stdin_closes_if_asked();
    let outcome = match &cli.command {
        Command::Run(a) => commands::run::execute(a),
        Command::Sweep(a) => commands::sweep::execute(a),
        Command::Serve(a) => commands::serve::execute(a),
        Command::Info(a) => commands::info::execute(a),
        Command::Completions(a) => commands::completions::completions(a),
        Command::Manpages(a) => commands::completions::manpages(a),
        Command::Tune(a) => commands::tune::execute(a),
        Command::Report(a) => commands::report::execute(a),
        Command::Compare(a) => commands::compare::execute(a),
        Command::Npb(a) => commands::npb::execute(a),
        Command::Hpl(a) => commands::hpl::execute(a),
        Command::Lab(a) => commands::lab::execute(a),
        Command::Study(a) => commands::study::execute(a),
        Command::Matrix(a) => commands::matrix::execute(a),
        Command::Collective(a) => commands::collective::execute(a),
        Command::Agent(a) => commands::matrix::execute_agent(a),
        Command::Worker(a) => commands::worker::execute(a),
        Command::NpbRank(a) => commands::npb::execute_rank(a),
    };
    if wulf::exec::interrupted() {
        // The command stopped in order after a signal; whatever its guards
        // missed ends with it.
        wulf::exec::owned::end_everything(wulf::exec::owned::FORCED_GRACE);
    }
    if let Err(e) = outcome {
        let relayed = e
            .downcast_ref::<wulf::error::WulfError>()
            .is_some_and(|w| matches!(w, wulf::error::WulfError::Relayed(_)));
        if !relayed {
            eprintln!("wulf: error: {e:#}");
        }
        std::process::exit(wulf::error::exit_code_of(&e));
    }
}

/// First Ctrl-C / SIGTERM / SIGHUP: ask the command to stop between
/// trials and save what it has; a watchdog ends what it started and exits
/// if it has not within a few seconds. A second one (or any, for a
/// server) ends what it started and exits at once (`exec::owned`).
fn install_signal_handler() {
    let result = ctrlc::set_handler(|| {
        wulf::exec::owned::signalled(wulf::EXIT_ON_SIGNAL.load(Ordering::Relaxed));
    });
    if let Err(e) = result {
        eprintln!(
            "wulf: warning: cannot handle Ctrl-C ({e}); an interrupted run will not be saved"
        );
    }
}
