//! One ApplySet as the fleet views list it: `applyset get` and the UI's list page read the same
//! facts from here (the Ready, Healthy and Drifted conditions, the revision, suspension, age)
//! and each renders them its own way, a kubectl table or badges.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::operator::api::ApplySet;
use crate::operator::status::{DRIFTED, HEALTHY, READY, condition};

/// The facts of one ApplySet that a fleet view shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub namespace: String,
    pub name: String,
    /// The Ready condition (none before the first run).
    pub ready: Option<Condition>,
    pub healthy: Option<Condition>,
    pub drifted: Option<Condition>,
    pub suspended: bool,
    /// The revision last applied in full.
    pub revision: Option<String>,
    pub created: Option<Time>,
}

impl Summary {
    pub fn of(applyset: &ApplySet) -> Summary {
        let status = applyset.status.clone().unwrap_or_default();
        Summary {
            namespace: applyset.metadata.namespace.clone().unwrap_or_default(),
            name: applyset.metadata.name.clone().unwrap_or_default(),
            ready: condition(&status, READY).cloned(),
            healthy: condition(&status, HEALTHY).cloned(),
            drifted: condition(&status, DRIFTED).cloned(),
            suspended: applyset.spec.suspend,
            revision: status.last_applied_revision,
            created: applyset.metadata.creation_timestamp.clone(),
        }
    }
}
