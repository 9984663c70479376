//! The runner: sets a scenario up, plays its steps on both sides, reports and cleans up.

use std::fmt::Write as _;

use anyhow::{Context, Result, bail};

use super::compare::{check_expectations, comparable_stdout, compare_snapshots, stderr_lines};
use super::side::{Side, Tool, applyset_apply_available, applyset_binary, substitute};
use super::{DEFAULT_KINDS, Scenario};
use crate::support::run;

/// Cleans up both sides and the cluster-wide setup (best effort; runs whatever the outcome).
fn clean_up(name: &str, scenario: &Scenario, kinds: &[String], sides: &[&Side]) {
    for side in sides {
        side.cleanup(kinds, &scenario.cleanup, name);
    }
    for args in &scenario.teardown {
        if let Ok(mut command) = sides[0].kubectl() {
            let args: Vec<String> = args.iter().map(|arg| substitute(arg, "<no-namespace>", name)).collect();
            let _ = run(command.args(&args), None);
        }
    }
}

/// Runs a scenario on a thread whose stack holds documents nested to the apiserver's limit
/// (the comparison walks them recursively), with its own runtime.
pub(crate) fn on_scenario_thread(name: String) -> Result<()> {
    std::thread::Builder::new()
        .stack_size(applyset::DOCUMENT_THREAD_STACK)
        .spawn(move || {
            tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(run_scenario(&name))
        })?
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

async fn run_scenario(name: &str) -> Result<()> {
    let scenario = Scenario::load(name)?;
    let with_applyset = applyset_apply_available();
    let mut kinds: Vec<String> = DEFAULT_KINDS.iter().map(|kind| (*kind).to_owned()).collect();
    kinds.extend(scenario.kinds.iter().cloned());

    let mut kubectl_side = Side::create(Tool::Kubectl, name).await?;
    let mut applyset_side = match with_applyset {
        true => Some(Side::create(Tool::Applyset, name).await?),
        false => None,
    };

    let mut report = format!("scenario {name}: {}\n", scenario.description.trim());
    let _ = writeln!(
        report,
        "  kubectl side: {}; applyset side: {}",
        kubectl_side.ns(),
        applyset_side.as_ref().map_or("(applyset apply not implemented)", |side| side.ns())
    );

    let setup = (|| -> Result<()> {
        for args in &scenario.setup {
            let args: Vec<String> = args.iter().map(|arg| substitute(arg, "<no-namespace>", name)).collect();
            run(kubectl_side.kubectl()?.args(&args), None)?
                .success_stdout()
                .with_context(|| format!("setup of scenario {name}"))?;
        }
        Ok(())
    })();
    let outcome =
        setup.and_then(|()| play(name, &scenario, &kinds, &mut kubectl_side, applyset_side.as_mut(), &mut report));
    let mut sides: Vec<&Side> = vec![&kubectl_side];
    sides.extend(applyset_side.as_ref());
    clean_up(name, &scenario, &kinds, &sides);
    println!("{report}");
    let mismatches = outcome?;
    if mismatches > 0 {
        bail!("scenario {name}: {mismatches} mismatch(es) between kubectl and applyset (see the report above)");
    }
    if !with_applyset {
        bail!(
            "applyset apply not implemented: `{} apply --help` fails; the kubectl side of scenario {name} ran \
             and its checks passed",
            applyset_binary()
        );
    }
    Ok(())
}

/// Plays the steps; returns the number of mismatches (errors = harness/scenario failures).
fn play(
    name: &str,
    scenario: &Scenario,
    kinds: &[String],
    kubectl_side: &mut Side,
    mut applyset_side: Option<&mut Side>,
    report: &mut String,
) -> Result<usize> {
    let mut mismatches = 0;
    for (index, step) in scenario.steps.iter().enumerate() {
        let number = index + 1;
        let title = match (&step.apply, &step.kubectl) {
            (Some(version), _) => format!("apply {version} {}", step.flags.join(" ")),
            (_, Some(args)) => format!("kubectl {}", args.join(" ")),
            _ => unreachable!("checked by Scenario::load"),
        };
        let mut problems = Vec::new();
        let mut outputs = Vec::new();
        let mut sides: Vec<&mut Side> = vec![&mut *kubectl_side];
        if let Some(side) = applyset_side.as_deref_mut() {
            sides.push(side);
        }
        for side in sides.iter_mut() {
            let output = match (&step.apply, &step.kubectl) {
                (Some(version), _) => {
                    let dir = side.materialise(name, version, number)?;
                    let flags = side.substitute_args(&step.flags, name);
                    side.apply(&dir, &flags)?
                }
                (_, Some(args)) => side.kubectl_in_ns(&side.substitute_args(args, name))?,
                _ => unreachable!(),
            };
            if step.kubectl.is_some() && !output.success {
                bail!(
                    "step {number} ({title}) failed on the {} side:\n{}{}",
                    side.tool.name(),
                    output.stderr,
                    output.stdout
                );
            }
            outputs.push((
                output.success,
                side.neutral_output(&output.stdout).lines().map(str::to_owned).collect::<Vec<_>>(),
                stderr_lines(&side.neutral_output(&output.stderr)),
                output.stderr.clone(),
            ));
        }
        if outputs.len() == 2 && step.apply.is_some() {
            let (a, b) = (&outputs[0], &outputs[1]);
            if a.0 != b.0 {
                problems.push(format!(
                    "exit status: kubectl {}, applyset {}\n    kubectl stderr: {}\n    applyset stderr: {}",
                    if a.0 { "success" } else { "failure" },
                    if b.0 { "success" } else { "failure" },
                    a.3.trim(),
                    b.3.trim()
                ));
            }
            if comparable_stdout(&a.1, &step.flags) != comparable_stdout(&b.1, &step.flags) {
                problems.push(format!(
                    "stdout differs:\n    kubectl:\n{}    applyset:\n{}",
                    a.1.iter().map(|l| format!("      {l}\n")).collect::<String>(),
                    b.1.iter().map(|l| format!("      {l}\n")).collect::<String>()
                ));
            }
            if a.2 != b.2 {
                problems.push(format!(
                    "stderr differs (klog headers stripped):\n    kubectl:\n{}    applyset:\n{}",
                    a.2.iter().map(|l| format!("      {l}\n")).collect::<String>(),
                    b.2.iter().map(|l| format!("      {l}\n")).collect::<String>()
                ));
            }
        }

        for side in sides.iter() {
            side.wait_for_deployments()?;
        }
        let mut snapshots = Vec::new();
        for side in sides.iter_mut() {
            snapshots.push(side.snapshot(kinds)?);
        }
        // The checks pin what the scenario is about; on the kubectl side a failure is a
        // scenario bug, so it aborts.
        let kubectl_check = check_expectations(Tool::Kubectl, &snapshots[0], &step.check);
        if !kubectl_check.is_empty() {
            bail!(
                "scenario {name} step {number} ({title}): kubectl does not behave as the scenario says:\n  {}\n  \
                 kubectl said:\n{}\n{}\n  objects: {}",
                kubectl_check.join("\n  "),
                outputs[0].1.join("\n"),
                outputs[0].2.join("\n"),
                serde_json::to_string_pretty(&snapshots[0])?
            );
        }
        if snapshots.len() == 2 {
            problems.extend(check_expectations(Tool::Applyset, &snapshots[1], &step.check));
            problems.extend(compare_snapshots(&snapshots[0], &snapshots[1]));
        }

        let (_, stdout, stderr, _) = &outputs[0];
        let mut summary: Vec<String> = stdout.clone();
        summary.extend(stderr.iter().map(|line| format!("stderr: {line}")));
        let status =
            if problems.is_empty() { if outputs.len() == 2 { "same" } else { "kubectl only" } } else { "MISMATCH" };
        let _ = writeln!(
            report,
            "  step {number} {}: {status} ({} objects) {}",
            title.trim(),
            snapshots[0].len(),
            if summary.is_empty() { String::new() } else { format!("[{}]", summary.join("; ")) }
        );
        for problem in &problems {
            for line in problem.lines() {
                let _ = writeln!(report, "    | {line}");
            }
        }
        mismatches += problems.len();
    }
    Ok(mismatches)
}
