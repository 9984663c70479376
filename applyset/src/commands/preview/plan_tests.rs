//! `applyset plan` against the reconcile's fake apiserver: a plan reads and never writes, and
//! what it names is what the controller's next run of the same revision does.

use clap::Parser;
use http::Method;
use serde_json::json;

use super::plan::plan;
use super::report::Outcome;
use crate::cli::PlanArgs;
use crate::operator::reconcile::tests::fixture::{Fixture, NS, configmap, configmap_path};

/// `applyset plan <ARGS>` as clap reads it.
#[derive(Parser)]
struct Command {
    #[command(flatten)]
    plan: PlanArgs,
}

fn plan_args(f: &Fixture, name: &str) -> PlanArgs {
    let path = f.repo.dir().display().to_string();
    Command::try_parse_from(["plan", name, "--path", &path, "-n", NS]).expect("valid arguments").plan
}

#[tokio::test]
async fn a_plan_writes_nothing_and_names_what_the_next_run_does() {
    let f = Fixture::new();
    f.applied_three(json!({})).await;
    // The next commit: a changes, c leaves git, d arrives.
    f.repo.write("a.yaml", &configmap("a", "changed")).write("d.yaml", &configmap("d", "4")).remove("c.yaml");
    f.repo.commit("next");
    f.fake.clear_requests();

    let printed = plan(&f.cluster, &plan_args(&f, "app")).await.expect("a plan");

    assert!(f.fake.writes().is_empty(), "a plan only reads: {:?}", f.fake.writes());
    let verbs: Vec<(&str, &str)> =
        printed.stdout.lines().filter_map(|l| l.split_once(' ')).map(|(verb, rest)| (verb, rest.trim())).collect();
    for expected in [
        ("configured", "configmap/a -n ns"),
        ("unchanged", "configmap/b -n ns"),
        ("created", "configmap/d -n ns"),
        ("pruned", "configmap/c -n ns"),
    ] {
        assert!(verbs.contains(&expected), "{expected:?} not in the plan:\n{}", printed.stdout);
    }
    assert_eq!(printed.outcome, Outcome { changes: true, failed: false }, "{}", printed.stderr);

    // The run of that revision does what the plan said.
    f.run_requested("app").await.expect("the run");
    let deletes: Vec<String> =
        f.fake.requests().into_iter().filter(|r| r.method == Method::DELETE).map(|r| r.path).collect();
    assert_eq!(deletes, [configmap_path("c")]);
    assert_eq!(f.configmap("a").expect("a")["data"]["value"], "changed");
    assert!(f.configmap("d").is_some());

    // And a plan of the applied revision changes nothing.
    let after = plan(&f.cluster, &plan_args(&f, "app")).await.expect("a plan");
    assert_eq!(after.outcome, Outcome { changes: false, failed: false }, "{}{}", after.stdout, after.stderr);
}
