//! `applyset apply -o …` prints what `kubectl apply -o …` prints: `yaml` (go-yaml's layout and
//! quoting), `jsonpath` and its `-as-json`/`-file` forms (client-go's dialect), `go-template`
//! and its forms (Go's text/template, with kubectl's functions), with kubectl's
//! errors for formats and templates it cannot use — reported after the objects were applied,
//! and before anything is pruned. Each case runs side by side with real kubectl, one namespace
//! each.

mod support;

use anyhow::Result;
use support::{
    CommandOutput, ManifestDir, TestNamespace, applyset_apply as applyset, kubectl_apply as kubectl, normalized,
};

/// Strings YAML 1.1 would misread, a multi-line value, and a Service whose port is a number.
const APP: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: tricky
  labels: {app: web, "10": ten, "9": nine, a10: x, a2: "y"}
data:
  yes: "yes"
  number: "1"
  hex: "0x1F"
  sexagesimal: "1:20"
  empty: ""
  tilde: "~"
  lead: "  lead"
  colon: "x: y"
  hash: "a # b"
  quote: "'q'"
  script: |
    #!/bin/sh
    echo "hi"   
  kept: "x\n\n"
  long: "a long value with spaces that runs past the eighty columns where go-yaml folds plain scalars"
  unicode: "héllo ✓"
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports:
  - port: 80
    targetPort: 8080
"#;

/// Runs `args` with both tools (each in its namespace) and compares exit code, stdout and stderr.
fn assert_same(ours: &TestNamespace, theirs: &TestNamespace, args: &[&str]) -> Result<CommandOutput> {
    let (a, b) = (applyset(ours, args)?, kubectl(theirs, args)?);
    assert_eq!(a.success, b.success, "{args:?}\nours: {a:?}\nkubectl: {b:?}");
    assert_eq!(normalized(&a.stdout, &ours.name), normalized(&b.stdout, &theirs.name), "stdout of {args:?}");
    assert_eq!(normalized(&a.stderr, &ours.name), normalized(&b.stderr, &theirs.name), "stderr of {args:?}");
    Ok(a)
}

#[tokio::test]
async fn yaml_output_is_kubectls() -> Result<()> {
    let (ours, theirs) = (TestNamespace::create("yaml-ours").await?, TestNamespace::create("yaml-kubectl").await?);
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    let printed = assert_same(&ours, &theirs, &["-f", dir.path(), "-o", "yaml"])?;
    assert!(printed.stdout.starts_with("apiVersion: v1\nitems:\n"), "{}", printed.stdout);
    assert!(printed.stdout.contains("  sexagesimal: \"1:20\"\n"), "{}", printed.stdout);
    // One object alone; again with managedFields kept.
    let single = ManifestDir::new(&[("a.yaml", APP.split("---").next().unwrap_or(APP))])?;
    assert_same(&ours, &theirs, &["-f", single.path(), "-o", "yaml"])?;
    let managed = assert_same(&ours, &theirs, &["-f", single.path(), "-o", "yaml", "--show-managed-fields"])?;
    assert!(managed.stdout.contains("managedFields:"), "{}", managed.stdout);
    Ok(())
}

#[tokio::test]
async fn jsonpath_output_is_kubectls() -> Result<()> {
    let (ours, theirs) = (TestNamespace::create("jp-ours").await?, TestNamespace::create("jp-kubectl").await?);
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    let template_file = ManifestDir::new(&[("t.txt", "{range .items[*]}{.kind}/{.metadata.name}{\"\\n\"}{end}")])?;
    let file_flag = format!("jsonpath-file={}", template_file.file("t.txt"));
    let cases: [&[&str]; 9] = [
        &["-o", "jsonpath={range .items[*]}{.kind}/{.metadata.name}{\"\\n\"}{end}"],
        &["-o", "jsonpath={.items[*].spec.ports[0].port} {.items[0].metadata.labels}"],
        &["-o", "jsonpath={.items[?(@.kind==\"Service\")].metadata.name}"],
        &["-o", "jsonpath={.metadata.name}"],
        &["-o", "jsonpath-as-json={.items[*].metadata.name}"],
        &["-o", &file_flag],
        &["-o", "jsonpath", "--template", "{.kind}"],
        // Output of one object keeps its integers; kubectl's List holds floats.
        &["-o", "jsonpath={.items[?(@.spec.ports[0].port==80)].metadata.name}"],
        &["-o", "jsonpath={..port}"],
    ];
    for args in cases {
        assert_same(&ours, &theirs, &[&["-f", dir.path()][..], args].concat())?;
    }
    let service = ManifestDir::new(&[("s.yaml", APP.split("---").nth(1).unwrap_or(APP))])?;
    assert_same(&ours, &theirs, &["-f", service.path(), "-o", "jsonpath={.spec.ports[?(@.port==80)].targetPort}"])?;
    Ok(())
}

#[tokio::test]
async fn go_template_output_is_kubectls() -> Result<()> {
    let (ours, theirs) = (TestNamespace::create("gt-ours").await?, TestNamespace::create("gt-kubectl").await?);
    let dir = ManifestDir::new(&[("app.yaml", APP)])?;
    let template_file = ManifestDir::new(&[(
        "t.tmpl",
        "{{range .items}}{{.kind}}/{{.metadata.name}} {{len .metadata.labels}}\n{{end}}",
    )])?;
    let file_flag = format!("go-template-file={}", template_file.file("t.tmpl"));
    let cases: [&[&str]; 10] = [
        &["-o", "go-template={{range .items}}{{.metadata.name}}{{\"\\n\"}}{{end}}"],
        &[
            "-o",
            "go-template={{range .items}}{{if eq .kind \"Service\"}}{{range .spec.ports}}{{printf \"%d->%v\" .port .targetPort}}{{end}}{{end}}{{end}}",
        ],
        &["-o", "go-template={{(index .items 0).metadata.labels}} {{index (index .items 0).data \"yes\"}}"],
        &["-o", "go-template={{range $i, $o := .items}}{{$i}}={{$o.metadata.name | printf \"%q\"}} {{end}}"],
        &["-o", "go-template={{.kind}} {{.nope}}"],
        &["-o", &file_flag],
        &["-o", "template={{len .items}}"],
        // --template alone: go-template, printed object by object as each is applied.
        &["--template", "{{.kind}}/{{.metadata.name}};"],
        // Errors: kubectl's debugging help on stdout, after what the template wrote.
        &["-o", "go-template=before {{index .metadata 5}}"],
        &["-o", "go-template={{.nope.x}}", "--allow-missing-template-keys=false"],
    ];
    for args in cases {
        assert_same(&ours, &theirs, &[&["-f", dir.path()][..], args].concat())?;
    }
    Ok(())
}

#[tokio::test]
async fn unusable_formats_fail_after_applying_and_prune_nothing() -> Result<()> {
    let (ours, theirs) = (TestNamespace::create("fmt-ours").await?, TestNamespace::create("fmt-kubectl").await?);
    let prune = ["--prune", "-l", "app=web"];
    for ns in [&ours, &theirs] {
        let labelled = APP.replace("  name: web\n", "  name: web\n  labels: {app: web}\n");
        let seeded = ManifestDir::new(&[("app.yaml", &labelled)])?;
        applyset(ns, &["-f", seeded.path()])?.success_stdout()?;
    }
    let config_map_only = ManifestDir::new(&[("cm.yaml", APP.split("---").next().unwrap_or(APP))])?;
    let cases: [&[&str]; 7] = [
        &["-o", "bogus"],
        &["-o", "go-template={{.metadata.name"],
        &["-o", "jsonpath={.a"],
        &["-o", "jsonpath"],
        &["-o", "jsonpath-file=/nonexistent/template"],
        &["-o", "jsonpath={.data.hex[0]}"],
        &["--allow-missing-template-keys=false", "-o", "jsonpath={.nope}"],
    ];
    for args in cases {
        let failed = assert_same(&ours, &theirs, &[&["-f", config_map_only.path()][..], &prune, args].concat())?;
        assert!(!failed.success, "{args:?}");
    }
    // The Service was left out of every run above, and never pruned: printing failed first.
    for ns in [&ours, &theirs] {
        assert!(ns.exists("service/web")?, "{}", ns.name);
    }
    Ok(())
}
