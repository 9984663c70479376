//! `cli.md`: every command of the `applyset` CLI, read from clap's description of it
//! ([`clap::CommandFactory::command`]): usage, what it does, its arguments with their help,
//! defaults, environment variables and values. What clap hides stays hidden.
//!
//! A large set of flags several commands share (kubectl's cluster flags) is a flattened `Args`
//! struct, which clap makes a group named after the struct: such a group is listed once, at the
//! end, and each command links to it. A small one is listed with each command, where a reader
//! looks for it.

use std::collections::BTreeMap;
use std::fmt::Write;

use clap::builder::ValueParser;
use clap::{Arg, ArgAction, Command, CommandFactory};

use super::markdown::{Table, cell, code};

/// The fewest flags a shared group has to be listed once rather than with each command.
const SHARED_GROUP_MIN_ARGS: usize = 5;

pub fn page() -> String {
    page_of(crate::cli::Cli::command())
}

/// The page of the CLI `command` describes (its root command).
pub fn page_of(mut command: Command) -> String {
    // Building gives each subcommand its full name (`applyset apply view-last-applied`) and
    // the arguments clap adds (`--help`, `--version`).
    command.build();
    let commands = visible_commands(&command);
    let shared = shared_groups(&commands);
    let mut out = super::header("applyset/src/cli/ (the clap definition of the CLI)");
    out.push_str("# Command-line reference\n\n");
    out.push_str("Every command takes `-h` (a summary) and `--help` (this text). Commands:\n\n");
    for listed in &commands {
        let _ = writeln!(out, "- [{}](#{}): {}", full_name(listed), anchor(listed), paragraphs(&summary(listed)));
    }
    out.push('\n');
    for listed in &commands {
        out.push_str(&command_section(listed, &shared));
    }
    if !shared.is_empty() {
        out.push_str("## Shared flags\n\n");
        for (group, args) in &shared {
            let _ = writeln!(out, "### {}\n\n{}", group_title(group), arguments_table(args).render());
        }
    }
    out
}

/// The root command and every visible subcommand below it, depth first, in declaration order.
fn visible_commands(root: &Command) -> Vec<&Command> {
    let mut commands = vec![root];
    for subcommand in root.get_subcommands() {
        // clap's own `help` subcommand repeats what `--help` says.
        if !subcommand.is_hide_set() && subcommand.get_name() != "help" {
            commands.extend(visible_commands(subcommand));
        }
    }
    commands
}

/// The groups (flattened `Args` structs) of at least [`SHARED_GROUP_MIN_ARGS`] visible arguments
/// that more than one command takes, by name, with those arguments.
fn shared_groups<'a>(commands: &[&'a Command]) -> BTreeMap<String, Vec<&'a Arg>> {
    let mut takers: BTreeMap<String, (usize, Vec<&Arg>)> = BTreeMap::new();
    for command in commands {
        for group in command.get_groups() {
            let members: Vec<&Arg> = group
                .get_args()
                .filter_map(|id| command.get_arguments().find(|arg| arg.get_id() == id))
                .filter(|arg| !arg.is_hide_set())
                .collect();
            if members.len() < SHARED_GROUP_MIN_ARGS {
                continue;
            }
            let entry = takers.entry(group.get_id().to_string()).or_insert((0, members));
            entry.0 += 1;
        }
    }
    takers.into_iter().filter(|(_, (count, _))| *count > 1).map(|(group, (_, args))| (group, args)).collect()
}

fn command_section(command: &Command, shared: &BTreeMap<String, Vec<&Arg>>) -> String {
    let mut out = format!("## {}\n\n", full_name(command));
    let about = command.get_long_about().or(command.get_about()).map(ToString::to_string).unwrap_or_default();
    if !about.is_empty() {
        let _ = writeln!(out, "{}\n", paragraphs(&about));
    }
    let usage = command.clone().render_usage().to_string();
    let _ = writeln!(out, "```text\n{}\n```\n", usage.trim());
    let subcommands: Vec<&Command> =
        command.get_subcommands().filter(|sub| !sub.is_hide_set() && sub.get_name() != "help").collect();
    if !subcommands.is_empty() {
        let mut table = Table::new(&["Subcommand", "Description"]);
        for sub in subcommands {
            table.row(vec![format!("[{}](#{})", sub.get_name(), anchor(sub)), cell(&summary(sub))]);
        }
        let _ = writeln!(out, "{}", table.render());
    }
    let groups_taken: Vec<&String> =
        shared.keys().filter(|group| command.get_groups().any(|taken| taken.get_id() == group.as_str())).collect();
    let in_shared_group = |arg: &Arg| {
        groups_taken.iter().any(|group| shared[group.as_str()].iter().any(|member| member.get_id() == arg.get_id()))
    };
    let own: Vec<&Arg> = command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set() && !is_generated(arg) && !in_shared_group(arg))
        .collect();
    if !own.is_empty() {
        let _ = writeln!(out, "{}", arguments_table(&own).render());
    }
    if !groups_taken.is_empty() {
        let links: Vec<String> = groups_taken
            .iter()
            .map(|group| {
                let title = group_title(group);
                format!("[{}](#{})", title.to_lowercase(), slug(&title))
            })
            .collect();
        let _ = writeln!(out, "Also takes the {}.\n", links.join(", the "));
    }
    if let Some(after) = command.get_after_long_help().or(command.get_after_help()) {
        let _ = writeln!(out, "```text\n{}\n```\n", after.to_string().trim_end());
    }
    out
}

/// `--help` and `--version`, which clap adds to every command.
fn is_generated(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version)
}

/// The table of `args`: the argument as typed, its default, its environment variable, and its
/// help with the values it takes.
fn arguments_table(args: &[&Arg]) -> Table {
    let mut table = Table::new(&["Argument", "Default", "Environment", "Description"]);
    for arg in args {
        let defaults: Vec<String> =
            arg.get_default_values().iter().map(|value| value.to_string_lossy().into()).collect();
        let default = if defaults.is_empty() || arg.is_hide_default_value_set() {
            String::new()
        } else {
            code(&defaults.join(","))
        };
        let env = match arg.get_env() {
            Some(name) if !arg.is_hide_env_set() => code(&name.to_string_lossy()),
            _ => String::new(),
        };
        table.row(vec![code(&synopsis(arg)), default, env, describe(arg)]);
    }
    table
}

/// The argument as typed: `-f, --filename <PATH>`, `--dry-run[=<MODE>]`, `<NAME>`.
fn synopsis(arg: &Arg) -> String {
    // clap's derive names a boolean's value after the field (`<RECURSIVE>`): what it takes is
    // `true` or `false`.
    let value_names: Vec<String> = match arg.get_value_names() {
        _ if is_boolean(arg) => vec!["BOOL".to_owned()],
        Some(names) => names.iter().map(ToString::to_string).collect(),
        None => vec![arg.get_id().to_string().to_uppercase()],
    };
    let values = value_names.iter().map(|name| format!("<{name}>")).collect::<Vec<_>>().join(" ");
    if arg.is_positional() {
        let repeated = if matches!(arg.get_action(), ArgAction::Append) { "..." } else { "" };
        return if arg.is_required_set() { format!("{values}{repeated}") } else { format!("[{values}]{repeated}") };
    }
    let mut names = Vec::new();
    names.extend(arg.get_short().map(|short| format!("-{short}")));
    names.extend(arg.get_long().map(|long| format!("--{long}")));
    let mut synopsis = names.join(", ");
    // A kubectl-style boolean (`--prune`, `--prune=false`) is a flag that takes an optional value.
    let range = arg.get_num_args().unwrap_or_default();
    if range.max_values() > 0 {
        let optional = range.min_values() == 0;
        let separator = if arg.is_require_equals_set() { "=" } else { " " };
        match (optional, separator) {
            (true, "=") => synopsis.push_str(&format!("[={values}]")),
            (true, _) => synopsis.push_str(&format!(" [{values}]")),
            (false, _) => synopsis.push_str(&format!("{separator}{values}")),
        }
    }
    synopsis
}

/// The help of `arg`, then the values it takes (with their own help) unless hidden.
fn describe(arg: &Arg) -> String {
    let help = arg.get_long_help().or(arg.get_help()).map(ToString::to_string).unwrap_or_default();
    let mut description = cell(&help);
    let possible: Vec<String> = arg
        .get_possible_values()
        .into_iter()
        .filter(|value| !value.is_hide_set())
        .map(|value| match value.get_help() {
            Some(help) => format!("{} ({})", code(value.get_name()), cell(&help.to_string())),
            None => code(value.get_name()),
        })
        .collect();
    // A boolean flag's `true`/`false` says nothing its help does not.
    if !possible.is_empty() && !arg.is_hide_possible_values_set() && !is_boolean(arg) {
        if !description.is_empty() {
            description.push_str("<br><br>");
        }
        let _ = write!(description, "One of {}.", possible.join(", "));
    }
    description
}

/// A flag (`--all`), or an option whose value is a boolean (kubectl's `--prune=false`).
fn is_boolean(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse)
        || arg.get_value_parser().type_id() == ValueParser::bool().type_id()
}

/// `applyset apply view-last-applied`; the root command by its name.
fn full_name(command: &Command) -> &str {
    command.get_bin_name().unwrap_or(command.get_name())
}

/// The first line of what a command does, for lists.
fn summary(command: &Command) -> String {
    command.get_about().map(|about| about.to_string().lines().next().unwrap_or_default().to_owned()).unwrap_or_default()
}

/// Text for the page body (not a table): paragraphs kept, lines wrapped in the source joined,
/// HTML-like text escaped as in a cell.
fn paragraphs(text: &str) -> String {
    cell(text).replace("<br><br>", "\n\n").replace("\\|", "|")
}

/// `ClusterArgs` → `Cluster flags`, `KubectlApplyArgs` → `Kubectl apply flags`.
fn group_title(group: &str) -> String {
    let stem = group.strip_suffix("Args").unwrap_or(group);
    let mut words = String::new();
    for (index, character) in stem.chars().enumerate() {
        if character.is_uppercase() && index > 0 {
            words.push(' ');
            words.extend(character.to_lowercase());
        } else {
            words.push(character);
        }
    }
    format!("{words} flags")
}

/// The anchor mdBook gives a command's heading (its full name).
fn anchor(command: &Command) -> String {
    slug(full_name(command))
}

/// The id mdBook gives a heading: lower case, spaces as `-`, other punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args, Parser, Subcommand};

    /// Flags two commands share, enough to be listed once.
    #[derive(Debug, Args)]
    struct ConnectionArgs {
        /// The server | its URL.
        #[arg(long, value_name = "URL", env = "DEMO_SERVER")]
        server: Option<String>,
        /// As whom.
        #[arg(long)]
        user: Option<String>,
        /// With what.
        #[arg(long)]
        token: Option<String>,
        /// How long.
        #[arg(long, default_value = "5s")]
        timeout: String,
        /// Trust anything.
        #[arg(long)]
        insecure: bool,
    }

    /// One flag two commands share: listed with each.
    #[derive(Debug, Args)]
    struct ScopeArgs {
        /// Where.
        #[arg(short = 'n', long)]
        namespace: Option<String>,
    }

    #[derive(Debug, Parser)]
    #[command(name = "demo", about = "A demo tool")]
    struct Demo {
        #[command(subcommand)]
        command: DemoCommand,
    }

    #[derive(Debug, Subcommand)]
    enum DemoCommand {
        /// Say hello.
        ///
        /// At length.
        Greet {
            /// Whom to greet.
            #[arg(value_name = "NAME")]
            name: String,
            /// How loudly.
            #[arg(long, default_value = "normal", value_parser = ["quiet", "normal"])]
            volume: String,
            /// Internal.
            #[arg(long, hide = true)]
            secret: bool,
            #[command(flatten)]
            connection: ConnectionArgs,
            #[command(flatten)]
            scope: ScopeArgs,
        },
        /// Say goodbye.
        Part {
            #[command(flatten)]
            connection: ConnectionArgs,
            #[command(flatten)]
            scope: ScopeArgs,
        },
        #[command(hide = true)]
        Hidden,
    }

    #[test]
    fn a_command_has_its_usage_about_and_arguments() {
        let page = page_of(Demo::command());
        assert!(page.contains("## demo greet\n\nSay hello.\n\nAt length.\n"), "{page}");
        assert!(page.contains("```text\nUsage: demo greet [OPTIONS] <NAME>\n```"), "{page}");
        assert!(page.contains("| `<NAME>` |  |  | Whom to greet |"), "{page}");
        assert!(
            page.contains("| `--volume <VOLUME>` | `normal` |  | How loudly<br><br>One of `quiet`, `normal`. |"),
            "{page}"
        );
    }

    #[test]
    fn hidden_commands_and_arguments_stay_hidden() {
        let page = page_of(Demo::command());
        assert!(!page.contains("secret"), "{page}");
        assert!(!page.contains("hidden"), "{page}");
        assert!(!page.contains("| `-h, --help` |"), "clap's own flags are not listed:\n{page}");
    }

    #[test]
    fn shared_flags_are_listed_once_and_linked() {
        let page = page_of(Demo::command());
        assert_eq!(page.matches("`--server <URL>`").count(), 1, "{page}");
        assert!(page.contains("### Connection flags\n"), "{page}");
        assert!(page.contains("| `--server <URL>` |  | `DEMO_SERVER` | The server \\| its URL |"), "{page}");
        assert_eq!(page.matches("Also takes the [connection flags](#connection-flags).").count(), 2, "{page}");
        assert_eq!(page.matches("| `-n, --namespace <NAMESPACE>` |  |  | Where |").count(), 2, "{page}");
        assert!(!page.contains("Scope flags"), "{page}");
    }

    #[test]
    fn synopses_follow_clap() {
        let arg = |arg: Arg| {
            let mut command = Command::new("x").arg(arg);
            command.build();
            synopsis(command.get_arguments().next().unwrap())
        };
        assert_eq!(arg(Arg::new("file").short('f').long("filename").value_name("PATH")), "-f, --filename <PATH>");
        assert_eq!(
            arg(Arg::new("dry").long("dry-run").value_name("MODE").num_args(0..=1).require_equals(true)),
            "--dry-run[=<MODE>]"
        );
        assert_eq!(arg(Arg::new("all").long("all").action(ArgAction::SetTrue)), "--all");
        assert_eq!(
            arg(Arg::new("prune").long("prune").action(ArgAction::SetTrue).num_args(0..=1).require_equals(true)),
            "--prune[=<BOOL>]"
        );
        let kubectl_boolean = Arg::new("force")
            .long("force")
            .num_args(0..=1)
            .require_equals(true)
            .value_name("FORCE")
            .value_parser(|text: &str| text.parse::<bool>());
        assert_eq!(arg(kubectl_boolean), "--force[=<BOOL>]");
        assert_eq!(arg(Arg::new("names").value_name("NAME").action(ArgAction::Append)), "[<NAME>]...");
    }

    #[test]
    fn group_titles_and_slugs() {
        assert_eq!(group_title("KubectlApplyArgs"), "Kubectl apply flags");
        assert_eq!(slug("applyset apply view-last-applied"), "applyset-apply-view-last-applied");
        assert_eq!(slug("Cluster flags"), "cluster-flags");
    }

    #[test]
    fn the_applyset_page_lists_every_command() {
        let page = page();
        for name in
            ["## applyset\n", "## applyset apply\n", "## applyset controller\n", "## applyset patch three-way\n"]
        {
            assert!(page.contains(name), "no {name:?} in the page");
        }
    }
}
