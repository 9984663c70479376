//! `applyset build` and `applyset plan`.

use std::process::ExitCode;

use crate::cli::{BuildArgs, PlanArgs};

pub fn build(_args: BuildArgs) -> ExitCode {
    eprintln!("error: applyset build is being built");
    ExitCode::from(2)
}

pub fn plan(_args: PlanArgs) -> ExitCode {
    eprintln!("error: applyset plan is being built");
    ExitCode::from(2)
}
