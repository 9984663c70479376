//! The command line as kubectl's resource builder reads it (`ResourceTypeOrNameArgs`,
//! `FilenameParam`, `SelectAllParam`, `LabelSelectorParam`): every problem found is reported at
//! once, in kubectl's order.

use super::error::{BuilderError, LastAppliedError};
use super::select::Request;
use crate::cluster::Cluster;
use crate::manifest;

/// The builder's state once the command line is read: kubectl's fields of the same names.
#[derive(Default)]
pub struct Builder {
    errors: Vec<BuilderError>,
    other_errors: Vec<LastAppliedError>,
    pub has_paths: bool,
    pub resources: Vec<String>,
    pub names: Vec<String>,
    pub tuples: Vec<(String, String)>,
    pub label_selector: Option<String>,
    pub select_all: bool,
}

impl Builder {
    /// The command line as kubectl's builder reads it: every problem found is reported at once.
    pub async fn read(cluster: &Cluster, request: &Request<'_>) -> Result<Builder, LastAppliedError> {
        let mut builder = Builder::default();
        if request.args_before_files {
            builder.resource_type_or_name_args(cluster, request.resources, request.type_alone_selects_all).await;
            builder.filename_param(request);
        } else {
            builder.filename_param(request);
            builder.resource_type_or_name_args(cluster, request.resources, request.type_alone_selects_all).await;
        }
        builder.select_all_param(request.all);
        builder.label_selector_param(request.selector.unwrap_or_default());
        let mut errors: Vec<LastAppliedError> = builder.errors.drain(..).map(LastAppliedError::from).collect();
        errors.append(&mut builder.other_errors);
        match LastAppliedError::aggregate(errors) {
            Some(error) => Err(error),
            None => Ok(builder),
        }
    }

    /// `FilenameParam`: `-f` with `-k` refused, and every `-f` value that names nothing.
    fn filename_param(&mut self, request: &Request<'_>) {
        let (files, kustomize) = (!request.filenames.is_empty(), request.kustomize.is_some());
        let refused = self.errors.len();
        if files && kustomize {
            self.errors.push(BuilderError::FilenameAndKustomize);
        }
        if kustomize && request.recursive {
            self.errors.push(BuilderError::KustomizeRecursive);
        }
        if self.errors.len() > refused {
            return;
        }
        let (_, path_errors) =
            manifest::walk::expand(request.filenames, request.recursive, manifest::walk::Root::current());
        self.errors.extend(path_errors.into_iter().map(BuilderError::Path));
        self.has_paths = files || kustomize;
    }

    /// `ResourceTypeOrNameArgs`: `TYPE/NAME…`, or `TYPE[,TYPE…] [NAME…]` (a category such as
    /// `all` expanded first).
    async fn resource_type_or_name_args(&mut self, cluster: &Cluster, args: &[String], allow_empty_selector: bool) {
        let mut args = normalize_multiple_resources_args(args);
        match combined_type_args(&args) {
            Some(Err(error)) => return self.errors.push(error),
            Some(Ok(tuples)) => {
                self.tuples.extend(tuples);
                return;
            }
            None => {}
        }
        if let Some(first) = args.first_mut() {
            match cluster.api_index().await {
                Ok(index) => {
                    *first = first.split(',').map(|word| index.replace_alias(word)).collect::<Vec<_>>().join(",")
                }
                Err(error) => self.other_errors.push(error.into()),
            }
        }
        if let Some((types, names)) = args.split_first() {
            self.names.extend(names.iter().cloned());
            self.resources.extend(split_resource_argument(types));
            if names.is_empty() && self.label_selector.is_none() && allow_empty_selector {
                self.label_selector = Some(String::new());
            }
        }
    }

    fn select_all_param(&mut self, all: bool) {
        if all && self.label_selector.is_some() {
            return self.errors.push(BuilderError::AllWithSelector);
        }
        self.select_all = all;
    }

    fn label_selector_param(&mut self, selector: &str) {
        let trimmed = selector.trim();
        if trimmed.is_empty() {
            return;
        }
        if self.select_all {
            return self.errors.push(BuilderError::SelectorWithAll(selector.to_owned()));
        }
        self.label_selector = Some(trimmed.to_owned());
    }
}

/// `a,b,c NAME…` as the tuples `a/NAME b/NAME c/NAME …`.
fn normalize_multiple_resources_args(args: &[String]) -> Vec<String> {
    if args.len() >= 2 {
        let resources = split_resource_argument(&args[0]);
        if resources.len() > 1 {
            return resources.iter().flat_map(|r| args[1..].iter().map(move |name| format!("{r}/{name}"))).collect();
        }
    }
    args.to_vec()
}

/// The tuples of `TYPE/NAME…` arguments; `None` when no argument has a slash.
fn combined_type_args(args: &[String]) -> Option<Result<Vec<(String, String)>, BuilderError>> {
    let slashed = args.iter().filter(|a| a.contains('/')).count();
    if slashed == 0 {
        return None;
    }
    if slashed != args.len() {
        let program = std::env::args().next().unwrap_or_default();
        let program = program.rsplit('/').next().unwrap_or_default().to_owned();
        return Some(Err(BuilderError::CombinedTypeArgs { program }));
    }
    Some(args.iter().map(|arg| split_resource_type_name(arg)).collect())
}

fn split_resource_type_name(arg: &str) -> Result<(String, String), BuilderError> {
    let parts: Vec<&str> = arg.split('/').collect();
    let [resource, name] = parts.as_slice() else { return Err(BuilderError::MoreThanOneSlash) };
    if resource.is_empty() || name.is_empty() || split_resource_argument(resource).len() != 1 {
        return Err(BuilderError::SingleResourceAndName);
    }
    Ok(((*resource).to_owned(), (*name).to_owned()))
}

/// `a,b,a` → `a b` (kubectl's `SplitResourceArgument`: unique, in order).
pub fn split_resource_argument(arg: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in arg.split(',') {
        if !out.iter().any(|seen| seen == part) {
            out.push(part.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn several_types_and_names_become_tuples() {
        assert_eq!(
            normalize_multiple_resources_args(&strings(&["cm,deploy", "a", "b"])),
            ["cm/a", "cm/b", "deploy/a", "deploy/b"]
        );
        assert_eq!(normalize_multiple_resources_args(&strings(&["cm", "a"])), ["cm", "a"]);
        assert_eq!(normalize_multiple_resources_args(&strings(&["cm,cm", "a"])), ["cm,cm", "a"], "one type: unchanged");
        assert_eq!(split_resource_argument("a,b,a"), ["a", "b"]);
    }

    #[test]
    fn type_name_arguments() {
        let tuples = combined_type_args(&strings(&["cm/a", "deploy/web"])).unwrap().unwrap();
        assert_eq!(tuples, [("cm".to_owned(), "a".to_owned()), ("deploy".to_owned(), "web".to_owned())]);
        assert!(combined_type_args(&strings(&["cm", "a"])).is_none());
        assert!(matches!(
            combined_type_args(&strings(&["cm/a", "cm"])),
            Some(Err(BuilderError::CombinedTypeArgs { .. }))
        ));
        assert_eq!(split_resource_type_name("cm/a/b"), Err(BuilderError::MoreThanOneSlash));
        assert_eq!(split_resource_type_name("/a"), Err(BuilderError::SingleResourceAndName));
        assert_eq!(split_resource_type_name("cm,deploy/a"), Err(BuilderError::SingleResourceAndName));
    }

    #[test]
    fn all_and_selectors_exclude_each_other_in_kubectls_order() {
        let mut builder = Builder { label_selector: Some(String::new()), ..Builder::default() };
        builder.select_all_param(true);
        assert_eq!(builder.errors, [BuilderError::AllWithSelector]);
        let mut builder = Builder::default();
        builder.select_all_param(true);
        builder.label_selector_param(" app=x");
        assert_eq!(builder.errors, [BuilderError::SelectorWithAll(" app=x".into())]);
        let mut builder = Builder::default();
        builder.label_selector_param(" app=x ");
        assert_eq!(builder.label_selector.as_deref(), Some("app=x"));
    }
}
