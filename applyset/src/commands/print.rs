//! What `applyset apply` prints, as kubectl prints it: one line per object (or the objects
//! through `-o`'s printer) on stdout, warnings and failures on stderr, prune's results after the
//! apply's.

use crate::apply::{self, ApplyReport};
use crate::applyset::PruneSummary;
use crate::causes::{Chain, with_causes};
use crate::cli::ApplyArgs;
use crate::cluster::DryRun;
use crate::manifest;
use crate::printers::{OutputFormat, PrintFlags, Printed};

use super::apply::LoadFailure;

/// The printer `-o`/`--template` choose, as kubectl resolves it.
pub(super) fn output_format(args: &ApplyArgs) -> OutputFormat {
    OutputFormat::resolve(&PrintFlags {
        output: args.output.as_deref(),
        template: args.kubectl.template.as_deref(),
        allow_missing_keys: args.kubectl.allow_missing_template_keys,
        show_managed_fields: args.kubectl.show_managed_fields,
    })
}

/// Prints warnings, one line per object (stdout) and the failures (stderr); returns whether
/// anything failed. `load_failures` are the documents that could not be read.
pub fn print_report(
    report: &ApplyReport,
    dry_run: DryRun,
    format: &OutputFormat,
    load_failures: &[LoadFailure],
) -> bool {
    let mut printed = Vec::new();
    let mut print_errors = Vec::new();
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    // kubectl's warning writer prints each distinct server warning once per run.
    let mut seen = std::collections::HashSet::new();
    for object in &report.objects {
        for warning in &object.warnings {
            if seen.insert(warning.as_str()) {
                let _ = out.flush();
                eprintln!("{warning}");
            }
        }
        match (&object.result, format) {
            (Ok(_), OutputFormat::Name) => {
                let _ = writeln!(out, "{}", object.name);
            }
            (Ok(verb), OutputFormat::Lines) => {
                let _ = writeln!(out, "{} {}{}", object.name, verb.word(), dry_run.suffix());
            }
            (Ok(_), OutputFormat::Objects(printer)) if printer.per_object => {
                let result = object.details.as_ref().and_then(|d| d.result.clone()).unwrap_or_default();
                let done = printer.print(vec![result]);
                let _ = write!(out, "{}", done.text);
                print_errors.extend(done.error.map(|error| with_causes(&error)));
            }
            (Ok(_), _) => printed.extend(object.details.as_ref().and_then(|d| d.result.clone())),
            (Err(_), _) => {}
        }
    }
    let _ = out.flush();
    drop(out);
    let lines = failure_lines(report, load_failures, &print_errors);
    for line in &lines {
        eprintln!("{line}");
    }
    if !lines.is_empty() {
        // kubectl prints whole objects only once everything applied.
        return true;
    }
    let printed = match format {
        OutputFormat::Objects(printer) if !printed.is_empty() && !printer.per_object => printer.print(printed),
        OutputFormat::Unusable(error) if !report.objects.is_empty() => {
            Printed { text: String::new(), error: Some(error.clone()) }
        }
        _ => return false,
    };
    print!("{}", printed.text);
    match printed.error.map(|error| with_causes(&error)) {
        None => false,
        Some(message) => {
            let _ = std::io::stdout().flush();
            // kubectl's messages that end in a newline are printed as they are.
            eprint!("error: {message}{}", if message.ends_with('\n') { "" } else { "\n" });
            true
        }
    }
}

/// One failure of a run, as kubectl collects them.
enum Failure<'a> {
    /// A document that could not be read.
    Load(&'a str),
    /// An object that failed, and where it came from.
    Object(&'a manifest::Source, &'a apply::ObjectError),
}

impl Failure<'_> {
    /// The failure printed alone (`cmdutil.CheckErr`), led by the object's source.
    fn alone(&self) -> String {
        match self {
            Failure::Load(message) => format!("error: {message}"),
            Failure::Object(source, error) => with_source(source, &error.render()),
        }
    }

    /// The failure as one of several (`MultipleErrors`), led by the object's source.
    fn in_list(&self) -> String {
        match self {
            Failure::Load(message) => (*message).to_owned(),
            Failure::Object(source, error) => with_source(source, &error.render_in_list()),
        }
    }

    /// The failure's own text (Go's `err.Error()`), as it shows inside an aggregate.
    fn text(&self) -> &str {
        match self {
            Failure::Load(message) => message,
            Failure::Object(_, error) => &error.message,
        }
    }
}

/// kubectl's wording, led by where the object came from (kubectl's lone-error form names
/// neither the file nor the document).
fn with_source(source: &manifest::Source, line: &str) -> String {
    match line.strip_prefix("error: ") {
        Some(message) => format!("error: {source}: {message}"),
        None => format!("{source}: {line}"),
    }
}

/// The stderr lines of a run's failures, in kubectl's arrangement: reading the input collects
/// the unreadable documents and the unmappable kinds in input order (one error, or an
/// aggregate), applying adds each object's failure after them; a lone error prints with
/// `error: `, several print one per line, and an aggregate among them prints on one line as Go
/// formats it (`[a, b]`, repeated messages once).
fn failure_lines(report: &ApplyReport, load_failures: &[LoadFailure], print_errors: &[String]) -> Vec<String> {
    // Ordered by (objects read before, a document's read error before the object that follows it).
    let mut reading: Vec<((usize, u8), Failure<'_>)> =
        load_failures.iter().map(|f| ((f.position, 0), Failure::Load(f.message.as_str()))).collect();
    let mut applying = Vec::new();
    for (index, object) in report.objects.iter().enumerate() {
        let Err(error) = &object.result else { continue };
        let failure = Failure::Object(&object.source, error);
        if error.category() == apply::ErrorCategory::NoMatch {
            // Mapped while reading, after the documents read before it.
            reading.push(((index, 1), failure));
        } else {
            applying.push(failure);
        }
    }
    // Objects that applied but could not be printed (`--template` alone prints each one).
    applying.extend(print_errors.iter().map(|message| Failure::Load(message.trim_end_matches('\n'))));
    reading.sort_by_key(|(position, _)| *position);
    let reading: Vec<Failure<'_>> = reading.into_iter().map(|(_, f)| f).collect();
    match (reading.len(), applying.len()) {
        (0, 0) => Vec::new(),
        (1, 0) => vec![reading[0].alone()],
        (0, 1) => vec![applying[0].alone()],
        (_, 0) => reading.iter().map(Failure::in_list).collect(),
        (0, _) => applying.iter().map(Failure::in_list).collect(),
        (1, _) => std::iter::once(&reading[0]).chain(&applying).map(Failure::in_list).collect(),
        (_, _) => {
            let aggregate = manifest::go_aggregate(reading.iter().map(Failure::text)).unwrap_or_default();
            std::iter::once(aggregate).chain(applying.iter().map(Failure::in_list)).collect()
        }
    }
}

/// Prints prune's warnings (each once, after the apply's), the pruned objects as kubectl does
/// (lines, names, or the objects through `-o`'s printer) and the errors; returns whether
/// anything failed. `applyset_prune`: kubectl's ApplySet prune prints with one printer.
pub(super) fn print_prune(
    summary: &PruneSummary,
    server_warnings: &[String],
    report: &ApplyReport,
    dry_run: DryRun,
    format: &OutputFormat,
    applyset_prune: bool,
) -> bool {
    let mut seen: std::collections::HashSet<&str> =
        report.objects.iter().flat_map(|o| o.warnings.iter().map(String::as_str)).collect();
    for warning in summary.warnings.iter().chain(server_warnings) {
        if seen.insert(warning.as_str()) {
            eprintln!("{warning}");
        }
    }
    match format {
        OutputFormat::Objects(printer) => {
            let objects = summary.pruned.iter().filter_map(|object| object.object.clone());
            print!("{}", printer.print_pruned(objects, applyset_prune));
        }
        // `-o name` prints bare names, as kubectl's name printer does for pruned objects too.
        OutputFormat::Name => summary.pruned.iter().for_each(|object| println!("{}", object.name)),
        _ => summary.pruned.iter().for_each(|object| println!("{}", object.line(dry_run))),
    }
    for error in &summary.errors {
        eprintln!("error: {error}", error = Chain(&error));
    }
    !summary.errors.is_empty()
}

pub(super) fn print_warnings(warnings: Vec<String>) {
    for warning in warnings {
        eprintln!("{warning}");
    }
}
