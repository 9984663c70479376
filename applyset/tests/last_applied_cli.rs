//! `applyset apply view-last-applied | set-last-applied | edit-last-applied` side by side with
//! real kubectl 1.33 on the local control plane: the same objects made by `kubectl apply` in
//! two namespaces, then our command in one and kubectl's in the other, compared byte for byte
//! (stdout, stderr, exit status, and the annotations they leave), the namespace names and
//! server-assigned values blanked.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;
use support::{APP, CommandOutput, ManifestDir, TestNamespace, kubectl_path, normalized, run};

/// A ConfigMap whose annotation shows go-yaml's and Go's JSON rules (key order `a9` before
/// `a10`, YAML 1.1 words quoted, HTML characters escaped, a multi-line value), one with no
/// label, and an object made without the annotation.
const OBJECTS: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: tricky
  labels: {app: demo}
data:
  a10: "x"
  a9: "y"
  "n": "no"
  html: "<b>&</b>"
  multi: "line one\nline two\n"
  number: "1.50"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: plain
data:
  k: v
"#;

/// What both sides apply first.
fn setup(ns: &TestNamespace, dir: &ManifestDir) -> Result<()> {
    ns.kubectl_ok(&["apply", "-f", &dir.file("app.yaml"), "-f", &dir.file("objects.yaml")], None)?;
    ns.kubectl_ok(&["create", "configmap", "bare", "--from-literal=a=b"], None)?;
    Ok(())
}

fn manifests() -> Result<ManifestDir> {
    ManifestDir::new(&[("app.yaml", APP), ("objects.yaml", OBJECTS)])
}

/// Two namespaces set up alike: ours, and kubectl's.
async fn pair(prefix: &str, dir: &ManifestDir) -> Result<(TestNamespace, TestNamespace)> {
    let ours = TestNamespace::create(&format!("{prefix}-ours")).await?;
    let theirs = TestNamespace::create(&format!("{prefix}-kubectl")).await?;
    setup(&ours, dir)?;
    setup(&theirs, dir)?;
    Ok((ours, theirs))
}

/// `applyset apply SUBCOMMAND --kubeconfig K -n NS ARGS`.
fn applyset(ns: &TestNamespace, subcommand: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_applyset"));
    command.env_remove("KUBECONFIG").arg("apply").arg(subcommand).arg("--kubeconfig").arg(&ns.kubeconfig);
    command.args(["-n", &ns.name]).args(args);
    command
}

/// `kubectl.1.33 --kubeconfig K --namespace NS apply SUBCOMMAND ARGS`.
fn kubectl(ns: &TestNamespace, subcommand: &str, args: &[&str]) -> Result<Command> {
    let mut command = ns.kubectl()?;
    command.env_remove("KUBECONFIG").arg("apply").arg(subcommand).args(args);
    Ok(command)
}

/// A command's output made comparable across the two sides: namespaces, server values, each
/// program's name (in usage hints and temporary file names) and the temporary directory.
fn comparable(output: &CommandOutput, ns: &TestNamespace, tmp: Option<&Path>) -> (bool, String, String) {
    let kubectl_name = kubectl_path().ok().and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
    let clean = |text: &str| {
        let mut text = normalized(text, &ns.name);
        if let Some(tmp) = tmp {
            text = text.replace(&tmp.display().to_string(), "TMP");
        }
        // kubectl names itself `kubectl` in usage hints, and by its file name elsewhere.
        for program in kubectl_name.iter().map(String::as_str).chain(["kubectl", "applyset"]) {
            text = text
                .replace(&format!("'{program} "), "'PROGRAM ")
                .replace(&format!("/{program}-edit-"), "/PROGRAM-edit-");
        }
        // Temporary files: `PROGRAM-edit-<random>.yaml`.
        let mut out = String::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("PROGRAM-edit-") {
            out.push_str(&rest[..at + "PROGRAM-edit-".len()]);
            rest = rest[at + "PROGRAM-edit-".len()..].trim_start_matches(|c: char| c.is_ascii_digit());
            out.push('N');
        }
        out.push_str(rest);
        out
    };
    (output.success, clean(&output.stdout), clean(&output.stderr))
}

/// Runs both sides and asserts they said the same.
fn same(ours: &TestNamespace, theirs: &TestNamespace, subcommand: &str, args: &[&str]) -> Result<CommandOutput> {
    let a = run(&mut applyset(ours, subcommand, args), None)?;
    let b = run(&mut kubectl(theirs, subcommand, args)?, None)?;
    assert_eq!(
        comparable(&a, ours, None),
        comparable(&b, theirs, None),
        "{subcommand} {args:?}\nours: {a:?}\nkubectl: {b:?}"
    );
    Ok(a)
}

/// Every object's last-applied annotation in the namespace (`name=annotation` lines), the
/// namespace's name blanked.
fn annotations(ns: &TestNamespace) -> Result<String> {
    let path = r#"{range .items[*]}{.kind}/{.metadata.name}={.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}{"\n"}{end}"#;
    let text = ns.kubectl_ok(&["get", "configmaps,deployments", "-o", &format!("jsonpath={path}")], None)?;
    Ok(text.replace(&ns.name, "NS"))
}

#[tokio::test]
async fn view_json_is_kubectls() -> Result<()> {
    let dir = manifests()?;
    let (ours, theirs) = pair("view-json", &dir).await?;
    let out = same(&ours, &theirs, "view-last-applied", &["configmap/tricky", "-o", "json"])?;
    assert!(
        out.stdout.starts_with("{\n  \"apiVersion\": \"v1\",\n  \"data\": {\n    \"a10\": \"x\""),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("\\u003cb\\u003e\\u0026\\u003c/b\\u003e"),
        "the annotation's own escapes: {}",
        out.stdout
    );
    // Several objects: one document after the other.
    same(&ours, &theirs, "view-last-applied", &["-f", &dir.file("objects.yaml"), "-o", "json"])?;
    same(&ours, &theirs, "view-last-applied", &["deploy", "web", "--output=json"])?;
    Ok(())
}

#[tokio::test]
async fn view_yaml_and_the_ways_of_naming_objects_are_kubectls() -> Result<()> {
    let dir = manifests()?;
    let (ours, theirs) = pair("view-yaml", &dir).await?;
    let out = same(&ours, &theirs, "view-last-applied", &["cm", "tricky"])?;
    assert!(out.stdout.contains("  a9: \"y\"\n  a10: x\n"), "go-yaml's key order: {}", out.stdout);
    let (app, objects) = (dir.file("app.yaml"), dir.file("objects.yaml"));
    let cases: &[&[&str]] = &[
        &["configmap/tricky", "deployment/web"],
        &["deployments.apps", "web"],
        &["deploy.v1.apps", "web"],
        &["Deployment", "web"],
        &["-f", &app],
        &["-f", dir.path()],
        &["-f", dir.path(), "-R", "-l", "app=demo"],
        &["-f", &objects, "--all"],
        &["cm", "-l", "app=demo"],
        &["cm"],
        &["all"],
        &["cm", "plain", "bare"],
    ];
    for args in cases {
        let out = same(&ours, &theirs, "view-last-applied", args)?;
        assert!(out.success && out.stdout.starts_with("apiVersion: "), "{args:?}: {out:?}");
    }
    // The flags given before the subcommand's name are its own, as kubectl reads them.
    let mut before = Command::new(env!("CARGO_BIN_EXE_applyset"));
    before.env_remove("KUBECONFIG").arg("apply").arg("--kubeconfig").arg(&ours.kubeconfig);
    before.args(["-n", &ours.name, "view-last-applied", "cm/plain"]);
    let before = run(&mut before, None)?;
    assert_eq!(
        normalized(&before.stdout, &ours.name),
        "apiVersion: v1\ndata:\n  k: v\nkind: ConfigMap\nmetadata:\n  annotations: {}\n  name: plain\n  namespace: NS\n"
    );
    Ok(())
}

#[tokio::test]
async fn view_errors_are_kubectls() -> Result<()> {
    let dir = manifests()?;
    dir.write("bare.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bare\n")?;
    dir.write("missing.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: missing\n")?;
    dir.write(
        "elsewhere.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: no-such-namespace\n",
    )?;
    dir.write("unknown.yaml", "apiVersion: example.com/v1\nkind: Nothing\nmetadata:\n  name: x\n")?;
    let (ours, theirs) = pair("view-errors", &dir).await?;
    let cases: &[&[&str]] = &[
        &[],
        &["cm", "missing"],
        &["cm", "plain", "missing", "tricky"],
        // Two types and two names: four objects, the first missing one stops the command.
        &["cm,deploy", "web", "tricky"],
        &["bogus", "x"],
        &["cm/plain", "cm"],
        &["cm/a/b"],
        &["-f", &dir.file("bare.yaml")],
        &["-f", &dir.file("missing.yaml")],
        &["-f", &dir.file("elsewhere.yaml")],
        &["-f", &dir.file("unknown.yaml")],
        &["-f", &dir.file("nothing-here.yaml")],
        &["-f", &dir.file("app.yaml"), "cm", "plain"],
        &["-l", "app=demo"],
        &["cm", "--all"],
        &["cm", "--all", "-l", "app=demo"],
        &["cm", "plain", "-o", "wide"],
    ];
    for args in cases {
        let out = same(&ours, &theirs, "view-last-applied", args)?;
        assert!(!out.success && out.stdout.is_empty() && !out.stderr.is_empty(), "{args:?}: {out:?}");
    }
    // No object with an annotation: nothing printed, whatever the output mode.
    let out = same(&ours, &theirs, "view-last-applied", &["cm", "bare", "-o", "wide"])?;
    assert!(out.success && out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    Ok(())
}

/// A changed configuration for `set-last-applied`: the ConfigMap without its label and with
/// other data, the Deployment with more replicas.
const CHANGED: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: tricky
data:
  html: "<i>changed</i>"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
"#;

#[tokio::test]
async fn set_last_applied_writes_kubectls_annotation() -> Result<()> {
    let dir = manifests()?;
    dir.write("changed.yaml", CHANGED)?;
    dir.write(
        "bare.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bare\n  annotations: {note: kept}\ndata:\n  a: b\n",
    )?;
    let (ours, theirs) = pair("set", &dir).await?;
    let changed = dir.file("changed.yaml");
    // Dry runs print and change nothing.
    for dry_run in ["--dry-run=client", "--dry-run=server"] {
        same(&ours, &theirs, "set-last-applied", &["-f", &changed, dry_run])?;
    }
    same(&ours, &theirs, "set-last-applied", &["-f", &dir.file("objects.yaml"), "--dry-run=client", "-o", "yaml"])?;
    assert_eq!(annotations(&ours)?, annotations(&theirs)?);
    let before = annotations(&ours)?;
    // Written: the annotation bytes are kubectl's, and nothing else changed.
    let out = same(&ours, &theirs, "set-last-applied", &["-f", &changed])?;
    assert_eq!(out.stdout, "configmap/tricky configured\ndeployment.apps/web configured\n");
    let after = annotations(&ours)?;
    assert_ne!(after, before);
    assert_eq!(after, annotations(&theirs)?);
    assert!(after.contains(r#"ConfigMap/tricky={"apiVersion":"v1","data":{"html":"\u003ci\u003echanged\u003c/i\u003e"},"kind":"ConfigMap","metadata":{"name":"tricky","namespace":"NS"}}"#), "{after}");
    assert_eq!(ours.jsonpath("deployment/web", "{.spec.replicas}")?, "2", "only the annotation is written");
    // Again: nothing to change, said before anything else is printed.
    same(&ours, &theirs, "set-last-applied", &["-f", &changed, "-f", &dir.file("objects.yaml"), "-o", "name"])?;
    same(&ours, &theirs, "set-last-applied", &["-f", &changed])?;
    // An object without the annotation: refused, unless asked to create it.
    same(&ours, &theirs, "set-last-applied", &["-f", &dir.file("bare.yaml")])?;
    same(&ours, &theirs, "set-last-applied", &["-f", &dir.file("bare.yaml"), "--create-annotation", "-o", "json"])?;
    assert_eq!(annotations(&ours)?, annotations(&theirs)?);
    Ok(())
}

#[tokio::test]
async fn set_last_applied_errors_are_kubectls() -> Result<()> {
    let dir = manifests()?;
    dir.write("missing.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: missing\n")?;
    dir.write("elsewhere.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: elsewhere\n")?;
    let (ours, theirs) = pair("set-errors", &dir).await?;
    let objects = dir.file("objects.yaml");
    let cases: &[&[&str]] = &[
        &[],
        &["cm", "plain"],
        &["-f", &dir.file("missing.yaml")],
        &["-f", &dir.file("elsewhere.yaml")],
        &["-f", &objects, "--dry-run=bogus"],
        &["-f", &objects, "-o", "wide"],
        &["-f", &dir.file("nothing-here.yaml")],
    ];
    for args in cases {
        let out = same(&ours, &theirs, "set-last-applied", args)?;
        assert!(!out.success && !out.stderr.is_empty(), "{args:?}: {out:?}");
    }
    assert_eq!(annotations(&ours)?, annotations(&theirs)?);
    Ok(())
}

/// A scripted editor: its Nth run saves `reply-N` of its directory over the file when there is
/// one (else leaves the file as it is), and keeps what it was given as `seen-N`.
const EDITOR: &str = r#"#!/bin/sh
n=$(cat "$EDITOR_DIR/count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$EDITOR_DIR/count"
cp "$1" "$EDITOR_DIR/seen-$n"
echo "$1" > "$EDITOR_DIR/path-$n"
if [ -f "$EDITOR_DIR/reply-$n" ]; then cat "$EDITOR_DIR/reply-$n" > "$1"; fi
"#;

/// One side of an edit: the editor's directory (its replies, what it saw) and the temporary
/// directory of the command.
struct EditSide {
    dir: PathBuf,
    tmp: PathBuf,
}

impl EditSide {
    /// `replies` with `NAMESPACE` standing for the side's namespace.
    fn new(root: &ManifestDir, name: &str, ns: &TestNamespace, replies: &[Option<&str>]) -> Result<EditSide> {
        let dir = PathBuf::from(root.file(name));
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp)?;
        for (i, reply) in replies.iter().enumerate() {
            if let Some(reply) = reply {
                std::fs::write(dir.join(format!("reply-{}", i + 1)), reply.replace("NAMESPACE", &ns.name))?;
            }
        }
        Ok(EditSide { dir, tmp })
    }

    fn run(&self, mut command: Command, editor: &str) -> Result<CommandOutput> {
        command.env("KUBE_EDITOR", editor).env("EDITOR_DIR", &self.dir).env("TMPDIR", &self.tmp);
        run(&mut command, None)
    }

    /// What the editor was given, each time, and the files it edited.
    fn seen(&self, ns: &TestNamespace) -> Result<Vec<String>> {
        let mut seen = Vec::new();
        for n in 1.. {
            let Ok(text) = std::fs::read_to_string(self.dir.join(format!("seen-{n}"))) else { break };
            let path = std::fs::read_to_string(self.dir.join(format!("path-{n}")))?;
            let output =
                CommandOutput { command: String::new(), success: true, code: Some(0), stdout: text, stderr: path };
            let (_, text, path) = comparable(&output, ns, Some(&self.tmp));
            seen.push(format!("{path}{text}"));
        }
        Ok(seen)
    }

    /// The temporary files left behind (kubectl keeps the user's changes on failure).
    fn left(&self) -> Result<usize> {
        Ok(std::fs::read_dir(&self.tmp)?.count())
    }
}

/// Runs an edit on both sides with the same replies and asserts everything matches: output,
/// exit status, each file the editor was given, the files left and the annotations after.
async fn same_edit(
    root: &ManifestDir,
    (ours, theirs): (&TestNamespace, &TestNamespace),
    args: &[&str],
    replies: &[Option<&str>],
) -> Result<(CommandOutput, Vec<String>)> {
    let editor = root.file("editor.sh");
    let case = format!("case-{}", support::random_suffix());
    let our_side = EditSide::new(root, &format!("{case}-ours"), ours, replies)?;
    let their_side = EditSide::new(root, &format!("{case}-kubectl"), theirs, replies)?;
    let a = our_side.run(applyset(ours, "edit-last-applied", args), &editor)?;
    let b = their_side.run(kubectl(theirs, "edit-last-applied", args)?, &editor)?;
    let context = format!("edit-last-applied {args:?}\nours: {a:?}\nkubectl: {b:?}");
    assert_eq!(comparable(&a, ours, Some(&our_side.tmp)), comparable(&b, theirs, Some(&their_side.tmp)), "{context}");
    let seen = our_side.seen(ours)?;
    assert_eq!(seen, their_side.seen(theirs)?, "{context}");
    assert_eq!(our_side.left()?, their_side.left()?, "{context}");
    assert_eq!(annotations(ours)?, annotations(theirs)?, "{context}");
    Ok((a, seen))
}

#[tokio::test]
async fn edit_last_applied_runs_kubectls_edit_loop() -> Result<()> {
    let dir = manifests()?;
    dir.write("editor.sh", EDITOR)?;
    std::fs::set_permissions(dir.file("editor.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let (ours, theirs) = pair("edit", &dir).await?;
    let both = (&ours, &theirs);
    // Saved unchanged.
    let (out, seen) = same_edit(&dir, both, &["cm", "plain"], &[None]).await?;
    assert_eq!(out.stderr, "Edit cancelled, no changes made.\n");
    assert!(
        seen[0]
            .starts_with("TMP/PROGRAM-edit-N.yaml\n# Please edit the 'last-applied-configuration' annotations below."),
        "{seen:?}"
    );
    // Changed: the annotation is the edited object, as kubectl encodes it.
    let edited = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: NAMESPACE\ndata:\n  k: edited # a comment\n";
    let (out, _) = same_edit(&dir, both, &["cm/plain"], &[Some(edited)]).await?;
    assert_eq!(out.stdout, "configmap/plain edited\n");
    assert!(annotations(&ours)?.contains(r#"ConfigMap/plain={"apiVersion":"v1","data":{"k":"edited"},"kind":"ConfigMap","metadata":{"name":"plain","namespace":"NS"}}"#));
    // Not YAML, then fixed: the file opens again with the reason in its header.
    let broken = "apiVersion: v1\ndata: [: x\n";
    let (out, seen) =
        same_edit(&dir, both, &["cm", "plain"], &[Some(broken), Some(edited.replace("edited", "fixed").as_str())])
            .await?;
    assert!(out.success);
    assert!(seen[1].contains("# configmaps \"plain\" was not valid:\n# * <nil>: Invalid value: \"The edited file failed validation\": yaml: line 1:"), "{seen:?}");
    // No kind, then saved as it was: cancelled, the changes kept in the file.
    let (out, _) =
        same_edit(&dir, both, &["cm", "plain"], &[Some("apiVersion: v1\nmetadata: {name: plain}\n"), None]).await?;
    assert!(!out.success && out.stderr.contains("Edit cancelled, no valid changes were saved."), "{out:?}");
    // A kind the server does not have: the reason shown, then cancelled.
    same_edit(&dir, both, &["cm", "plain"], &[Some("apiVersion: v1\nkind: Bogus\nmetadata: {name: plain}\n"), None])
        .await?;
    // JSON, and an edit of another object than the one opened (not found: the changes kept).
    let renamed =
        r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gone", "namespace": "NAMESPACE"}}"#;
    same_edit(&dir, both, &["cm", "plain", "-o", "json"], &[None]).await?;
    same_edit(&dir, both, &["cm", "plain", "-o", "json"], &[Some(renamed)]).await?;
    // Another namespace than the command's: refused.
    same_edit(&dir, both, &["cm", "plain"], &[Some(&edited.replace("NAMESPACE", "elsewhere"))]).await?;
    Ok(())
}

#[tokio::test]
async fn edit_last_applied_of_several_objects_and_its_errors_are_kubectls() -> Result<()> {
    let dir = manifests()?;
    dir.write("editor.sh", EDITOR)?;
    std::fs::set_permissions(dir.file("editor.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let (ours, theirs) = pair("edit-many", &dir).await?;
    let both = (&ours, &theirs);
    // Several objects open as a List; each edited one is written (kubectl matches them by UID,
    // which annotations lack, so the second counts as edited although unchanged).
    let list = "apiVersion: v1\nkind: List\nmetadata: {}\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: plain, namespace: NAMESPACE}\n  data: {k: listed}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: tricky, namespace: NAMESPACE, labels: {app: demo}}\n  data: {a10: x, a9: \"y\", \"n\": \"no\", html: \"<b>&</b>\", multi: \"line one\\nline two\\n\", number: \"1.50\"}\n";
    let (out, seen) = same_edit(&dir, both, &["cm", "plain", "tricky", "bare"], &[Some(list)]).await?;
    assert_eq!(out.stdout, "configmap/plain edited\nconfigmap/tricky edited\n");
    assert!(seen[0].contains("kind: List"), "{seen:?}");
    same_edit(&dir, both, &["cm/plain", "deploy/web", "-o", "yaml"], &[None]).await?;
    // Kinds the server does not have, in a List: kubectl's other wording for list items.
    let unknown = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Bogus, metadata: {name: a}}\n- {apiVersion: example.com/v1, kind: Other, metadata: {name: b}}\n";
    let (_, seen) = same_edit(&dir, both, &["cm", "plain"], &[Some(unknown), None]).await?;
    assert!(
        seen[1].contains("# The edited file had a syntax error: [unable to recognize no matches for kind \"Bogus\""),
        "{seen:?}"
    );
    // By file, by type alone, and what cannot be edited.
    same_edit(&dir, both, &["-f", &dir.file("objects.yaml")], &[None]).await?;
    same_edit(&dir, both, &["cm"], &[None]).await?;
    let cases: &[&[&str]] =
        &[&[], &["cm", "bare"], &["cm", "missing", "gone"], &["cm", "plain", "-o", "name"], &["bogus/x"]];
    for args in cases {
        let (out, seen) = same_edit(&dir, both, args, &[]).await?;
        assert!(!out.success && seen.is_empty(), "{args:?}: {out:?}");
    }
    Ok(())
}
