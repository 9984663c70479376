//! The `applyset` binary: thin entry point; every command lives in `commands/`.

use std::process::ExitCode;

use clap::Parser;

use applyset::cli::{Cli, Command};
use applyset::commands;

/// How often the controller hands the memory malloc holds free back to the system.
const TRIM_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Allocations from this size on are mapped, and unmapped when freed, rather than carved from
/// the arena. glibc would raise this bound to the largest block freed (up to 32 MiB), after
/// which a run's large buffers (a LIST's body, a record of members) stay in the arena.
const MMAP_FROM: std::os::raw::c_int = 128 * 1024;

/// glibc's malloc, set for a long-lived controller: one arena (a thread per core at most runs
/// Rust code here, and each extra arena keeps its own free memory), large blocks mapped, and
/// (see [`trim_freed_memory_periodically`]) free pages returned every second. Measured,
/// release build, against mimalloc purging at once: Flux's benchmark shape (1,000 ApplySets ×
/// 4 objects) peaks at 52 MiB where mimalloc held 102–109; one ApplySet of 20,000 ConfigMaps at
/// 106 MiB when Ready and 139 over a prune of 1,000, where mimalloc held 122–130 and 145–149.
/// `MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_` or `GLIBC_TUNABLES` set by the user win.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn tune_malloc() {
    let set_by_user = |name: &str| std::env::var_os(name).is_some() || std::env::var_os("GLIBC_TUNABLES").is_some();
    // SAFETY: mallopt sets one of glibc's malloc parameters from plain integers; it is called
    // here before any other thread exists, and a parameter it refuses is left as it was.
    unsafe {
        if !set_by_user("MALLOC_ARENA_MAX") {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
        if !set_by_user("MALLOC_MMAP_THRESHOLD_") {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_FROM);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_malloc() {}

/// glibc's malloc keeps what a program frees for the next allocation; only the top of the
/// arena goes back on its own. A controller frees in bursts (a run's manifests, a thousand
/// runs' reports) and then holds a steady cache: once a second, `malloc_trim` gives every
/// whole free page back.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn trim_freed_memory_periodically() {
    let trimming = std::thread::Builder::new().name("malloc-trim".into()).spawn(|| {
        loop {
            std::thread::sleep(TRIM_EVERY);
            // SAFETY: malloc_trim takes a plain integer (the pad to keep, 0) and walks glibc's
            // own arenas under their locks; it frees nothing a caller holds.
            unsafe { libc::malloc_trim(0) };
        }
    });
    if let Err(e) = trimming {
        eprintln!("warning: cannot start the malloc-trim thread ({e}); freed memory is kept by malloc");
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_freed_memory_periodically() {}

fn main() -> ExitCode {
    tune_malloc();
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
        Command::Controller(args) => {
            trim_freed_memory_periodically();
            return applyset::operator::controller::run(args);
        }
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
