//! The commands that show and drive ApplySets.

use std::process::ExitCode;

use crate::cli::{CompletionArgs, EventsArgs, GetArgs, NamedArgs, ReconcileArgs, ResumeArgs, SuspendArgs};

fn not_yet(command: &str) -> ExitCode {
    eprintln!("error: applyset {command} is being built");
    ExitCode::from(2)
}

pub fn get(_args: GetArgs) -> ExitCode {
    not_yet("get")
}
pub fn reconcile(_args: ReconcileArgs) -> ExitCode {
    not_yet("reconcile")
}
pub fn suspend(_args: SuspendArgs) -> ExitCode {
    not_yet("suspend")
}
pub fn resume(_args: ResumeArgs) -> ExitCode {
    not_yet("resume")
}
pub fn tree(_args: NamedArgs) -> ExitCode {
    not_yet("tree")
}
pub fn history(_args: NamedArgs) -> ExitCode {
    not_yet("history")
}
pub fn events(_args: EventsArgs) -> ExitCode {
    not_yet("events")
}
pub fn completion(_args: CompletionArgs) -> ExitCode {
    not_yet("completion")
}
