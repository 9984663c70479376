//! The `applyset` binary: thin entry point; every command lives in `commands/`.

use std::process::ExitCode;

use clap::Parser;

use applyset::cli::{Cli, Command};
use applyset::commands;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Patch(args) => commands::patch::run(args),
        Command::Apply(args) => return commands::apply::run(args),
        Command::Diff(args) => return commands::diff::run(args),
        Command::Controller(args) => return applyset::operator::controller::run(args),
        Command::Crd => {
            print!("{}", applyset::operator::api::crd_yaml());
            return ExitCode::SUCCESS;
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}
