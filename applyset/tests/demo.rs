//! `scripts/demo` itself, run as a user runs it (`--once`), against the tests' control plane
//! and with the applyset binary these tests were built with (`APPLYSET_DEMO_BINARY`, so the
//! test does not build the release one): it must come through every step, Ready with the
//! storefront rolled out, then the change in git applied and rolled out to 3 replicas.

mod support;

use std::process::Command;

use anyhow::{Context, Result, ensure};

/// What the demo leaves in the cluster, removed whatever the outcome: its controller is gone,
/// so the ApplySet's finalizer is taken off first.
struct DemoLeftovers {
    kubeconfig: std::path::PathBuf,
}

impl Drop for DemoLeftovers {
    fn drop(&mut self) {
        let kubectl = |args: &[&str]| {
            let _ = Command::new("kubectl").arg("--kubeconfig").arg(&self.kubeconfig).args(args).output();
        };
        kubectl(&[
            "-n",
            "default",
            "patch",
            "applyset",
            "shop",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ]);
        kubectl(&["-n", "default", "delete", "applyset", "shop", "--ignore-not-found", "--wait=false"]);
        kubectl(&["delete", "namespace", "shop", "--ignore-not-found", "--wait=false"]);
        kubectl(&["delete", "crd", "featureflags.shop.example.com", "--ignore-not-found", "--wait=false"]);
    }
}

#[test]
fn the_demo_runs_through_every_step() -> Result<()> {
    let kubeconfig = support::control_plane()?.kubeconfig.clone();
    let _leftovers = DemoLeftovers { kubeconfig: kubeconfig.clone() };
    let output = Command::new(support::repo_root().join("scripts/demo"))
        .arg("--once")
        .env("APPLYSET_DEMO_BINARY", env!("CARGO_BIN_EXE_applyset"))
        .output()
        .context("running scripts/demo")?;
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let shown = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    ensure!(output.status.success(), "scripts/demo --once exited {:?}\n{shown}", output.status.code());
    for step in ["Waiting for Ready=True", "A change in git: 3 replicas", "applyset history shop", "Metrics (excerpt)"]
    {
        ensure!(stdout.contains(step), "the step {step:?} did not run\n{shown}");
    }
    ensure!(stdout.contains("Ready=True"), "the ApplySet became Ready\n{shown}");
    let rolled_out = stdout.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.first() == Some(&"storefront") && fields.get(1) == Some(&"3/3")
    });
    ensure!(rolled_out, "the storefront rolled out to 3 replicas\n{shown}");
    ensure!(stdout.contains("applyset_reconcile_total{result=\"success\"}"), "the controller's metrics\n{shown}");
    Ok(())
}
