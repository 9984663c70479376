//! Manifests the tests apply: a directory of files, the CLI tests' app and a Widget CRD.

use std::path::PathBuf;

use anyhow::Result;

use super::random_suffix;

/// A temporary directory of manifest files, removed when dropped.
pub struct ManifestDir(PathBuf);

impl ManifestDir {
    /// A new directory holding `files` (name, content).
    pub fn new(files: &[(&str, &str)]) -> Result<ManifestDir> {
        let dir = std::env::temp_dir().join(format!("applyset-manifests-{}", random_suffix()));
        std::fs::create_dir_all(&dir)?;
        let dir = ManifestDir(dir);
        for (name, text) in files {
            dir.write(name, text)?;
        }
        Ok(dir)
    }

    pub fn path(&self) -> &str {
        self.0.to_str().expect("temp paths are UTF-8")
    }

    pub fn file(&self, name: &str) -> String {
        self.0.join(name).to_str().expect("UTF-8").to_owned()
    }

    pub fn write(&self, name: &str, text: &str) -> Result<()> {
        std::fs::write(self.0.join(name), text).map_err(Into::into)
    }

    pub fn remove(&self, name: &str) -> Result<()> {
        std::fs::remove_file(self.0.join(name)).map_err(Into::into)
    }
}

impl Drop for ManifestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A namespaced `Widget` CRD of `group`, schemaless: each test names a group of its own, since
/// a CRD is cluster-wide and another test may hold a `widgets` CRD meanwhile.
pub fn widget_crd(group: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.{group}\nspec:\n  group: {group}\n  scope: Namespaced\n  names: {{plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n"
    )
}

/// A ConfigMap and a Deployment (limits, env, an HTML-escaped value, an empty one): the app
/// the CLI tests apply, diff and change.
pub const APP: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: demo}
data:
  mode: "fast"
  html: "<b>&</b>"
  empty: ""
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 80
        env:
        - {name: A, value: "1"}
        resources:
          limits: {cpu: 500m, memory: 128Mi}
"#;
