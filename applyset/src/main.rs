//! The `applyset` binary: thin entry point; every command lives in `commands/`.

use std::process::ExitCode;

use clap::Parser;

use applyset::cli::{Cli, Command};
use applyset::commands;

/// mimalloc returns freed memory to the system where glibc's malloc keeps it: measured on the
/// controller applying 20,000 ConfigMaps (see the README's figures).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // A shell asking for completions (see `applyset completion`): answered, then exit.
    clap_complete::CompleteEnv::with_factory(<Cli as clap::CommandFactory>::command)
        .var(commands::fleet::COMPLETE_VAR)
        .complete();
    let cli = Cli::parse();
    // Documents may nest 10,000 levels (what the apiserver stores); the walks over them outside
    // the merge engine recurse a level at a time, so commands run on a thread whose stack holds
    // that (reserved address space; only the pages used are backed).
    let worker = std::thread::Builder::new().name("main".into()).stack_size(applyset::DOCUMENT_THREAD_STACK);
    match worker.spawn(move || run(cli)).map(std::thread::JoinHandle::join) {
        // kubectl's --warnings-as-errors, for every command that connected with it.
        Ok(Ok(code)) => applyset::cluster::fail_on_warnings(code),
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(e) => {
            eprintln!("error: cannot start the main thread: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> ExitCode {
    let outcome = match cli.command {
        Command::Patch(args) => commands::patch::run(args),
        Command::Apply(args) => return commands::apply::run(args),
        Command::Diff(args) => return commands::diff::run(args),
        Command::Controller(args) => return applyset::operator::controller::run(args),
        Command::Crd => {
            print!("{}", applyset::operator::api::crd_yaml());
            return ExitCode::SUCCESS;
        }
        Command::Get(args) => return commands::fleet::get(args),
        Command::Reconcile(args) => return commands::fleet::reconcile(args),
        Command::Suspend(args) => return commands::fleet::suspend(args),
        Command::Resume(args) => return commands::fleet::resume(args),
        Command::Tree(args) => return commands::fleet::tree(args),
        Command::History(args) => return commands::fleet::history(args),
        Command::Events(args) => return commands::fleet::events(args),
        Command::Ui(args) => return applyset::ui::ui(args),
        Command::Build(args) => return commands::preview::build(args),
        Command::Plan(args) => return commands::preview::plan(args),
        Command::Completion(args) => return commands::fleet::completion(args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}
