//! `applyset get [NAME]`: ApplySets as a table (or as objects with `-o json|yaml|name`), and
//! with `-w` a line for each change after it, as `kubectl get -w` prints them.

use std::process::ExitCode;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{ListParams, WatchEvent, WatchParams};

use super::summary::Summary;
use super::table::{GetColumns, render};
use super::{FleetError, block_on, namespace_or_default, request_failed};
use crate::cli::GetArgs;
use crate::commands::apply::connect;
use crate::operator::api::ApplySet;
use crate::printers::{OutputFormat, PrintFlags};

/// How the ApplySets are printed.
enum Printer {
    Table(GetColumns),
    Names,
    Objects(crate::printers::ObjectPrinter),
}

impl Printer {
    fn of(args: &GetArgs) -> Result<Printer, FleetError> {
        let wide = match args.output.as_deref() {
            None => false,
            Some("wide") => true,
            Some(other @ ("json" | "yaml" | "name")) => {
                return match OutputFormat::resolve(&PrintFlags { output: Some(other), ..PrintFlags::default() }) {
                    OutputFormat::Objects(printer) => Ok(Printer::Objects(printer)),
                    _ => Ok(Printer::Names),
                };
            }
            Some(other) => return Err(FleetError::Output(other.to_owned())),
        };
        Ok(Printer::Table(GetColumns { namespaces: args.all_namespaces, wide }))
    }

    /// The ApplySets listed (a table with its header).
    fn list(&self, applysets: &[ApplySet]) -> Result<String, FleetError> {
        match self {
            Printer::Table(columns) => {
                let now = Timestamp::now();
                let mut rows = vec![columns.header()];
                rows.extend(applysets.iter().map(|a| columns.row(&Summary::of(a), now)));
                Ok(render(&rows))
            }
            Printer::Names => Ok(applysets.iter().map(|a| format!("{}\n", qualified_name(a))).collect()),
            Printer::Objects(printer) => {
                let printed = printer.print(applysets.iter().map(as_value).collect());
                match printed.error {
                    Some(error) => Err(error.into()),
                    None => Ok(printed.text),
                }
            }
        }
    }

    /// One ApplySet that changed while watching (a row without the header).
    fn change(&self, applyset: &ApplySet) -> Result<String, FleetError> {
        match self {
            Printer::Table(columns) => Ok(render(&[columns.row(&Summary::of(applyset), Timestamp::now())])),
            other => other.list(std::slice::from_ref(applyset)),
        }
    }
}

fn qualified_name(applyset: &ApplySet) -> String {
    format!("applyset.applyset.dev/{}", applyset.metadata.name.as_deref().unwrap_or_default())
}

fn as_value(applyset: &ApplySet) -> applyset_merge::Value {
    let json = serde_json::to_value(applyset).unwrap_or_default();
    applyset_merge::Value::from(json)
}

pub fn get(args: GetArgs) -> ExitCode {
    block_on(|| run(args))
}

async fn run(args: GetArgs) -> Result<ExitCode, FleetError> {
    let printer = Printer::of(&args)?;
    let cluster = connect(&args.cluster).await?;
    let namespace = namespace_or_default(&cluster, args.namespace.namespace.as_deref());
    let api: Api<ApplySet> = if args.all_namespaces {
        Api::all(cluster.client().clone())
    } else {
        Api::namespaced(cluster.client().clone(), &namespace)
    };
    let mut list = ListParams::default();
    if let Some(name) = &args.name {
        list = list.fields(&format!("metadata.name={name}"));
    }
    let listed = api.list(&list).await.map_err(request_failed("cannot list ApplySets"))?;
    let resource_version = listed.metadata.resource_version.clone().unwrap_or_default();
    let applysets = listed.items;
    match (&args.name, applysets.is_empty()) {
        (Some(name), true) if !args.watch => {
            return Err(FleetError::NotFound(name.clone()));
        }
        (None, true) => {
            if args.all_namespaces {
                eprintln!("No resources found");
            } else {
                eprintln!("No resources found in {namespace} namespace.");
            }
        }
        _ => print!("{}", printer.list(&applysets)?),
    }
    if args.watch {
        watch(&api, &list, resource_version, &printer).await?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A line (or object) per change from `resource_version` on, until interrupted; a watch the
/// apiserver ends is started again where it stopped.
async fn watch(
    api: &Api<ApplySet>,
    list: &ListParams,
    mut resource_version: String,
    printer: &Printer,
) -> Result<(), FleetError> {
    let mut params = WatchParams::default();
    if let Some(fields) = &list.field_selector {
        params = params.fields(fields);
    }
    loop {
        let stream = api.watch(&params, &resource_version).await.map_err(request_failed("cannot watch ApplySets"))?;
        let mut stream = stream.boxed();
        while let Some(event) = stream.try_next().await.map_err(request_failed("watching ApplySets"))? {
            match event {
                WatchEvent::Added(a) | WatchEvent::Modified(a) | WatchEvent::Deleted(a) => {
                    resource_version = a.metadata.resource_version.clone().unwrap_or(resource_version);
                    print!("{}", printer.change(&a)?);
                    let _ = std::io::Write::flush(&mut std::io::stdout());
                }
                WatchEvent::Bookmark(mark) => resource_version = mark.metadata.resource_version,
                WatchEvent::Error(status) => return Err(FleetError::Server(status)),
            }
        }
    }
}
