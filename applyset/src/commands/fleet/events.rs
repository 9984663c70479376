//! `applyset events NAME`: the Events about an ApplySet, oldest first, as `kubectl events`
//! prints them; with `-w`, each new one after.

use std::process::ExitCode;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{ListParams, WatchEvent, WatchParams};

use super::table::{age, one_line, render};
use super::{FleetError, Target, block_on, request_failed};
use crate::cli::EventsArgs;
use crate::operator::api::KIND;

pub fn events(args: EventsArgs) -> ExitCode {
    block_on(|| async move {
        let target = Target::of(&args.target).await?;
        let api: Api<Event> = Api::namespaced(target.cluster.client().clone(), &target.namespace);
        let fields = about(&target.name);
        let listed = api
            .list(&ListParams::default().fields(&fields))
            .await
            .map_err(request_failed(format!("cannot list the Events of ApplySet {}", target.key())))?;
        let mut events = listed.items;
        events.sort_by_key(last_seen);
        if let Some(format) = args.output.as_deref() {
            let printer = match format {
                "json" | "yaml" => crate::printers::OutputFormat::resolve(&crate::printers::PrintFlags {
                    output: Some(format),
                    ..Default::default()
                }),
                other => return Err(FleetError::Output(other.to_owned())),
            };
            if let crate::printers::OutputFormat::Objects(printer) = printer {
                let values =
                    events.iter().map(|e| applyset_merge::Value::from(serde_json::to_value(e).unwrap_or_default()));
                let printed = printer.print(values.collect());
                print!("{}", printed.text);
                if let Some(error) = printed.error {
                    return Err(error.into());
                }
            }
            return Ok(ExitCode::SUCCESS);
        }
        let now = Timestamp::now();
        if events.is_empty() {
            eprintln!("No events found in {} namespace.", target.namespace);
        } else {
            let mut rows = vec![header()];
            rows.extend(events.iter().map(|e| row(e, now)));
            print!("{}", render(&rows));
        }
        if args.watch {
            let mut version = listed.metadata.resource_version.unwrap_or_default();
            let params = WatchParams::default().fields(&fields);
            loop {
                let stream = api.watch(&params, &version).await.map_err(request_failed("cannot watch Events"))?;
                let mut stream = stream.boxed();
                while let Some(event) = stream.try_next().await.map_err(request_failed("watching Events"))? {
                    match event {
                        WatchEvent::Added(e) | WatchEvent::Modified(e) => {
                            version = e.metadata.resource_version.clone().unwrap_or(version);
                            print!("{}", render(&[row(&e, Timestamp::now())]));
                            let _ = std::io::Write::flush(&mut std::io::stdout());
                        }
                        WatchEvent::Deleted(e) => version = e.metadata.resource_version.unwrap_or(version),
                        WatchEvent::Bookmark(mark) => version = mark.metadata.resource_version,
                        WatchEvent::Error(status) => return Err(FleetError::Server(status)),
                    }
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// The field selector of the core/v1 Events about the ApplySet `name` (of the namespace listed).
pub(crate) fn about(name: &str) -> String {
    format!("involvedObject.kind={KIND},involvedObject.name={name}")
}

fn header() -> Vec<String> {
    ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"].map(str::to_owned).to_vec()
}

/// When the Event was last seen: the series' last observation, else the last timestamp, else
/// when it happened or was created (the fields events.k8s.io/v1 and core/v1 writers fill).
pub(crate) fn last_seen(event: &Event) -> Option<Time> {
    let micro = |t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime| Time(t.0);
    event
        .series
        .as_ref()
        .and_then(|s| s.last_observed_time.as_ref().map(micro))
        .or_else(|| event.last_timestamp.clone())
        .or_else(|| event.event_time.as_ref().map(micro))
        .or_else(|| event.first_timestamp.clone())
        .or_else(|| event.metadata.creation_timestamp.clone())
}

fn row(event: &Event, now: Timestamp) -> Vec<String> {
    let object = format!(
        "{}/{}",
        event.involved_object.kind.as_deref().unwrap_or_default().to_lowercase(),
        event.involved_object.name.as_deref().unwrap_or_default()
    );
    vec![
        age(last_seen(event).as_ref(), now),
        event.type_.clone().unwrap_or_default(),
        event.reason.clone().unwrap_or_default(),
        object,
        one_line(event.message.as_deref().unwrap_or_default()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_row_has_its_age_type_reason_object_and_message_on_one_line() {
        let event: Event = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web.1", "namespace": "a"},
            "involvedObject": {"kind": "ApplySet", "name": "web", "namespace": "a"},
            "type": "Warning",
            "reason": "ApplyFailed",
            "message": "configmap/x:\n  invalid",
            "eventTime": "2026-11-27T10:00:00.000000Z",
            "series": {"count": 3, "lastObservedTime": "2026-11-27T10:02:00.000000Z"}
        }))
        .expect("an Event");
        let now: Timestamp = "2026-11-27T10:03:00Z".parse().expect("a time");
        assert_eq!(row(&event, now), ["60s", "Warning", "ApplyFailed", "applyset/web", "configmap/x: invalid"]);
    }
}
