//! Tables as kubectl prints them (its tabwriter: columns padded to the widest cell plus three
//! spaces, the last column unpadded) and the ApplySet row of `applyset get`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use super::summary::Summary;

/// Rows of cells, aligned as kubectl's printer aligns them.
pub fn render(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|cell| cell.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if c + 1 < row.len() {
                let pad = widths[c] - cell.chars().count() + 3;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// kubectl's `HumanDuration` (apimachinery's `duration` package): the AGE and LAST SEEN cells.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// The age of `time` at `now`, as kubectl prints it (`<unknown>` without a time).
pub fn age(time: Option<&Time>, now: Timestamp) -> String {
    match time {
        Some(Time(at)) => human_duration(now.as_second() - at.as_second()),
        None => "<unknown>".into(),
    }
}

/// What `applyset get` shows.
pub struct GetColumns {
    /// A NAMESPACE column first (`-A`).
    pub namespaces: bool,
    /// The Ready condition's message last (`-o wide`).
    pub wide: bool,
}

impl GetColumns {
    pub fn header(&self) -> Vec<String> {
        let mut cells: Vec<&str> = Vec::new();
        if self.namespaces {
            cells.push("NAMESPACE");
        }
        cells.extend(["NAME", "READY", "STATUS", "REVISION", "SUSPENDED", "DRIFTED", "HEALTHY", "AGE"]);
        if self.wide {
            cells.push("MESSAGE");
        }
        cells.into_iter().map(str::to_owned).collect()
    }

    /// One ApplySet: its Ready condition (status and reason), the revision applied, whether it
    /// is suspended, the Drifted and Healthy conditions (`-` when it has none), its age.
    pub fn row(&self, applyset: &Summary, now: Timestamp) -> Vec<String> {
        let ready = applyset.ready.as_ref();
        let state_of = |c: &Option<Condition>| c.as_ref().map_or_else(|| "-".to_owned(), |c| c.status.clone());
        let mut cells = Vec::new();
        if self.namespaces {
            cells.push(applyset.namespace.clone());
        }
        cells.push(applyset.name.clone());
        cells.push(ready.map_or_else(|| "Unknown".to_owned(), |c| c.status.clone()));
        cells.push(ready.map_or_else(|| "-".to_owned(), |c| c.reason.clone()));
        cells.push(applyset.revision.clone().unwrap_or_else(|| "-".into()));
        cells.push(if applyset.suspended { "True" } else { "False" }.to_owned());
        cells.push(state_of(&applyset.drifted));
        cells.push(state_of(&applyset.healthy));
        cells.push(age(applyset.created.as_ref(), now));
        if self.wide {
            cells.push(ready.map_or_else(String::new, |c| one_line(&c.message)));
        }
        cells
    }
}

/// A message on one line (a table row must stay one).
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator::api::ApplySet;

    #[test]
    fn human_duration_follows_kubectl_at_each_boundary() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (125, "2m5s"),
            (599, "9m59s"),
            (600, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 60, "3h1m"),
            (8 * 3600, "8h"),
            (47 * 3600 + 3599, "47h"),
            (48 * 3600, "2d"),
            (49 * 3600, "2d1h"),
            (8 * 86400, "8d"),
            (2 * 365 * 86400, "2y"),
            (2 * 365 * 86400 + 86400, "2y1d"),
            (8 * 365 * 86400, "8y"),
        ];
        for (seconds, expected) in cases {
            assert_eq!(human_duration(seconds), expected, "{seconds} s");
        }
    }

    #[test]
    fn columns_are_padded_to_the_widest_cell_plus_three() {
        let rows = vec![
            vec!["NAME".to_owned(), "READY".to_owned(), "AGE".to_owned()],
            vec!["a-long-name".to_owned(), "True".to_owned(), "5m".to_owned()],
        ];
        assert_eq!(render(&rows), "NAME          READY   AGE\na-long-name   True    5m\n");
    }

    fn applyset(yaml: &str) -> ApplySet {
        serde_yaml_ng::from_str(yaml).expect("an ApplySet")
    }

    #[test]
    fn a_row_shows_readiness_revision_suspension_drift_and_health() {
        let a = applyset(
            r#"
apiVersion: applyset.dev/v1alpha1
kind: ApplySet
metadata: {name: web, namespace: team-a, creationTimestamp: "2026-11-27T10:00:00Z"}
spec: {source: {url: "https://git.example/r.git"}, interval: 1m, suspend: true}
status:
  lastAppliedRevision: main@sha1:0123456789abcdef0123456789abcdef01234567
  conditions:
  - {type: Ready, status: "False", reason: ApplyFailed, message: "configmap/x:\n  bad", lastTransitionTime: "2026-11-27T10:01:00Z"}
  - {type: Drifted, status: "True", reason: DriftDetected, message: d, lastTransitionTime: "2026-11-27T10:01:00Z"}
"#,
        );
        let a = Summary::of(&a);
        let now: Timestamp = "2026-11-27T10:05:30Z".parse().expect("a time");
        let columns = GetColumns { namespaces: true, wide: true };
        assert_eq!(
            columns.row(&a, now),
            [
                "team-a",
                "web",
                "False",
                "ApplyFailed",
                "main@sha1:0123456789abcdef0123456789abcdef01234567",
                "True",
                "True",
                "-",
                "5m30s",
                "configmap/x: bad"
            ]
        );
        assert_eq!(columns.header().len(), columns.row(&a, now).len());
        let narrow = GetColumns { namespaces: false, wide: false };
        assert_eq!(narrow.header()[0], "NAME");
        assert_eq!(narrow.row(&a, now).len(), narrow.header().len());
    }
}
