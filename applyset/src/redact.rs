//! The one redaction layer that every message leaving the controller passes through: status
//! condition and inventory messages, Event notes, and log lines (through [`RedactingWriter`]).
//!
//! Two mechanisms, because neither suffices alone:
//! * **Known values.** The secrets a run handles (the git credentials, the user info of its
//!   source URL, the values of the Secret manifests it applies) are registered per ApplySet
//!   ([`register`]) and replaced in every form a message can carry them: as they are,
//!   JSON-escaped once (a patch) and twice (the last-applied annotation inside a patch, as Go's
//!   `encoding/json` escapes it), and base64-encoded (a Secret's `data`).
//! * **Shapes.** User info in URLs is scrubbed whatever its value ([`crate::source::scrub_url`]).
//!
//! Errors that quote whole objects (kubectl's "applying patch: … to: …") are also rendered
//! without their bodies by the controller ([`crate::apply::ObjectError::render_without_bodies`]):
//! a live Secret may hold values that no manifest in git has.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::{Arc, OnceLock, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};
use applyset_merge::Value;
use base64::Engine as _;

/// What a secret value is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Values shorter than this are not redacted by value: replacing every `on` or `123` in a
/// message would make it unreadable, and such values are guessable anyway.
pub const MIN_SECRET_LEN: usize = 4;

/// The forms of a set of secret values that messages may carry.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Secrets {
    forms: BTreeSet<String>,
}

impl Secrets {
    pub fn new() -> Secrets {
        Secrets::default()
    }

    pub fn is_empty(&self) -> bool {
        self.forms.is_empty()
    }

    /// Adds a secret value in each of its forms.
    pub fn add(&mut self, value: &str) {
        if value.len() < MIN_SECRET_LEN {
            return;
        }
        let escaped = json_escaped(value);
        let twice = json_escaped(&escaped);
        let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
        for form in [value.to_owned(), escaped, twice, encoded] {
            if form.len() >= MIN_SECRET_LEN {
                self.forms.insert(form);
            }
        }
    }

    /// Adds the values of a `v1` Secret manifest: `stringData` values, and `data` values both
    /// encoded and decoded. Any other object adds nothing.
    pub fn add_manifest(&mut self, object: &Value) {
        let Some(root) = object.as_object() else { return };
        let is_secret = root.get("kind").and_then(Value::as_str) == Some("Secret")
            && root.get("apiVersion").and_then(Value::as_str) == Some("v1");
        if !is_secret {
            return;
        }
        if let Some(Value::Object(data)) = root.get("data") {
            for value in data.values().filter_map(Value::as_str) {
                self.add(value);
                if let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(value.as_bytes()) {
                    self.add(&String::from_utf8_lossy(&decoded));
                }
            }
        }
        if let Some(Value::Object(data)) = root.get("stringData") {
            for value in data.values().filter_map(Value::as_str) {
                self.add(value);
            }
        }
    }

    /// `text` with every form replaced by [`REDACTED`] (longest first), then URL user info
    /// scrubbed.
    pub fn redact(&self, text: &str) -> String {
        let matcher = Matcher::build(self.forms.iter().cloned());
        matcher.redact(text)
    }
}

/// Go's `encoding/json` escaping of a string, without the quotes.
fn json_escaped(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    applyset_merge::value::write_json_string(value, &mut out);
    out[1..out.len() - 1].to_owned()
}

/// One automaton over every registered form.
struct Matcher {
    automaton: Option<AhoCorasick>,
}

impl Matcher {
    fn build(forms: impl IntoIterator<Item = String>) -> Matcher {
        let forms: Vec<String> = forms.into_iter().collect();
        if forms.is_empty() {
            return Matcher { automaton: None };
        }
        // Leftmost-longest: a value's escaped form wins over the value inside it.
        let automaton = AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(&forms).ok();
        Matcher { automaton }
    }

    fn redact(&self, text: &str) -> String {
        let replaced = self.automaton.as_ref().map(|automaton| {
            let mut out = String::with_capacity(text.len());
            automaton.replace_all_with(text, &mut out, |_, _, out| {
                out.push_str(REDACTED);
                true
            });
            out
        });
        crate::source::scrub_url(replaced.as_deref().unwrap_or(text))
    }
}

/// The secrets of every ApplySet this process handles, and the automaton over all of them.
struct Registry {
    by_owner: BTreeMap<String, Secrets>,
    matcher: Arc<Matcher>,
}

fn registry() -> &'static RwLock<Registry> {
    static REGISTRY: OnceLock<RwLock<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        RwLock::new(Registry { by_owner: BTreeMap::new(), matcher: Arc::new(Matcher { automaton: None }) })
    })
}

fn rebuild(registry: &mut Registry) {
    let forms: BTreeSet<String> = registry.by_owner.values().flat_map(|s| s.forms.iter().cloned()).collect();
    registry.matcher = Arc::new(Matcher::build(forms));
}

/// Registers (replaces) the secrets of `owner` (an ApplySet's `namespace/name`).
pub fn register(owner: &str, secrets: Secrets) {
    let mut registry = registry().write().unwrap_or_else(|p| p.into_inner());
    if registry.by_owner.get(owner) == Some(&secrets) {
        return;
    }
    if secrets.is_empty() {
        registry.by_owner.remove(owner);
    } else {
        registry.by_owner.insert(owner.to_owned(), secrets);
    }
    rebuild(&mut registry);
}

/// Adds to the secrets of `owner`, keeping those already registered.
pub fn register_more(owner: &str, more: &Secrets) {
    if more.is_empty() {
        return;
    }
    let mut registry = registry().write().unwrap_or_else(|p| p.into_inner());
    let entry = registry.by_owner.entry(owner.to_owned()).or_default();
    let before = entry.forms.len();
    entry.forms.extend(more.forms.iter().cloned());
    if entry.forms.len() != before {
        rebuild(&mut registry);
    }
}

/// The ApplySet is gone: its secrets need no redacting any more.
pub fn forget(owner: &str) {
    let mut registry = registry().write().unwrap_or_else(|p| p.into_inner());
    if registry.by_owner.remove(owner).is_some() {
        rebuild(&mut registry);
    }
}

/// `text` with every registered secret (of any ApplySet) and every URL's user info redacted.
pub fn redact(text: &str) -> String {
    let matcher = registry().read().unwrap_or_else(|p| p.into_inner()).matcher.clone();
    matcher.redact(text)
}

/// A `tracing_subscriber` writer that redacts each formatted log record before it reaches
/// standard error (the formatter writes one record per `write` call).
#[derive(Clone, Copy, Debug, Default)]
pub struct RedactingWriter;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for RedactingWriter {
    type Writer = RedactingWriter;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingWriter
    }
}

impl Write for RedactingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().lock().write_all(redact(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret_manifest(data: &[(&str, &str)], string_data: &[(&str, &str)]) -> Value {
        let encode = |v: &str| base64::engine::general_purpose::STANDARD.encode(v);
        let data: serde_json::Map<String, serde_json::Value> =
            data.iter().map(|(k, v)| ((*k).to_owned(), encode(v).into())).collect();
        let string_data: serde_json::Map<String, serde_json::Value> =
            string_data.iter().map(|(k, v)| ((*k).to_owned(), (*v).into())).collect();
        let json = serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": data, "stringData": string_data,
        });
        Value::from_json_str(&json.to_string()).unwrap()
    }

    /// The shapes a value takes in the messages the controller writes.
    #[test]
    fn every_form_of_a_secret_value_is_redacted() {
        let mut secrets = Secrets::new();
        secrets.add_manifest(&secret_manifest(
            &[("token", "ghp_T0ken/with+chars")],
            &[("password", "hunter2 \"quoted\" <&>")],
        ));
        let plain = "hunter2 \"quoted\" <&>";
        let once = json_escaped(plain);
        let twice = json_escaped(&once);
        let encoded = base64::engine::general_purpose::STANDARD.encode("ghp_T0ken/with+chars");
        let patch = format!(
            r#"error when applying patch: {{"stringData":{{"password":"{once}"}},"metadata":{{"annotations":{{"kubectl.kubernetes.io/last-applied-configuration":"{{\"stringData\":{{\"password\":\"{twice}\"}}}}"}}}},"data":{{"token":"{encoded}"}}}} raw={plain} decoded=ghp_T0ken/with+chars"#
        );
        let redacted = secrets.redact(&patch);
        for leaked in [plain, once.as_str(), twice.as_str(), encoded.as_str(), "ghp_T0ken/with+chars", "hunter2"] {
            assert!(!redacted.contains(leaked), "{leaked:?} leaked in {redacted}");
        }
        assert!(redacted.contains("error when applying patch"), "{redacted}");
        assert!(redacted.contains(REDACTED), "{redacted}");
    }

    #[test]
    fn short_values_and_other_kinds_are_left_alone() {
        let mut secrets = Secrets::new();
        secrets.add("abc");
        let config_map =
            Value::from_json_str(r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"k":"visible-value"}}"#).unwrap();
        secrets.add_manifest(&config_map);
        assert!(secrets.is_empty());
        assert_eq!(secrets.redact("abc visible-value"), "abc visible-value");
    }

    #[test]
    fn the_registry_redacts_for_every_owner_until_forgotten() {
        let mut a = Secrets::new();
        a.add("registry-secret-a");
        register("ns/a", a);
        let mut b = Secrets::new();
        b.add("registry-secret-b");
        register_more("ns/b", &b);
        assert_eq!(redact("x registry-secret-a y registry-secret-b"), format!("x {REDACTED} y {REDACTED}"));
        forget("ns/a");
        assert_eq!(redact("registry-secret-a"), "registry-secret-a");
        forget("ns/b");
    }

    /// The shapes git credentials take: a token as the user name, a password with URL-reserved
    /// characters (raw, percent-encoded, decoded in a libgit2 message).
    #[test]
    fn source_secrets_are_redacted_in_every_shape() {
        let url = "https://user:p%40ss%2Fw%23rd%3F%20x@git.example.com/org/repo.git";
        let mut secrets = Secrets::new();
        for value in crate::source::url_secrets(url)
            .into_iter()
            .chain(crate::source::url_secrets("https://ghp_TokenAsUser123@h/r"))
        {
            secrets.add(&value);
        }
        for message in [
            format!("failed to fetch {url}: refused"),
            "authentication with password 'p@ss/w#rd? x' refused".to_owned(),
            "token \"ghp_TokenAsUser123\" in \"https://ghp_TokenAsUser123@h/r\"".to_owned(),
        ] {
            let redacted = secrets.redact(&message);
            for leaked in ["p%40ss", "p@ss/w#rd? x", "ghp_TokenAsUser123"] {
                assert!(!redacted.contains(leaked), "{leaked:?} leaked in {redacted}");
            }
        }
        assert!(secrets.redact(&format!("failed to fetch {url}")).contains("git.example.com/org/repo.git"));
    }

    #[test]
    fn urls_are_scrubbed_whatever_the_registry_holds() {
        assert!(!redact("fetching https://user:s3cr3t@example.com/r.git failed").contains("s3cr3t"));
    }
}
