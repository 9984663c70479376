//! Command outputs made comparable across namespaces: server-assigned values and ApplySet IDs
//! blanked.

/// Printed objects with what the server assigns blanked (uid, resourceVersion, timestamps,
/// cluster IPs), in JSON (`"uid": "…"`, `"uid":"…"`), YAML (`uid: …`) and Go-syntax text
/// alike, so two namespaces' `-o json|yaml|jsonpath` outputs compare.
pub fn server_values_blanked(text: &str) -> String {
    let mut text = text.to_owned();
    for key in ["uid", "resourceVersion", "creationTimestamp", "time", "clusterIP"] {
        // (what precedes the value, what ends it): JSON, compact JSON, YAML, Go's `%v` of a map.
        let forms = [
            (format!("\"{key}\": \""), '"'),
            (format!("\"{key}\":\""), '"'),
            (format!(" {key}: "), '\n'),
            (format!(" {key}:"), ' '),
            (format!("[{key}:"), ' '),
        ];
        for (prefix, end) in forms {
            let mut out = String::new();
            let mut rest = text.as_str();
            while let Some(at) = rest.find(&prefix) {
                out.push_str(&rest[..at + prefix.len()]);
                rest = &rest[at + prefix.len()..];
                // `%v` forms only where a value follows directly (not YAML's `key: value`).
                if end == ' ' && (rest.starts_with(' ') || rest.starts_with('X')) {
                    continue;
                }
                out.push('X');
                // A `%v` value ends at the next entry or at the end of its map.
                let stop = if end == ' ' { rest.find([' ', ']']) } else { rest.find(end) };
                rest = &rest[stop.unwrap_or(rest.len())..];
            }
            out.push_str(rest);
            text = out;
        }
    }
    // Cluster IPs wherever they are (`clusterIPs` items): the test cluster's range is 10.0.0.0/24.
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("10.0.0.") {
        out.push_str(&rest[..at]);
        rest = rest[at + "10.0.0.".len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        out.push_str("IP");
    }
    out.push_str(rest);
    out
}

/// ApplySet IDs (`applyset-<43 base64url characters>-v1`, derived from the parent's namespace,
/// so different on each side) replaced by `<applyset-id>`.
pub fn applyset_ids_blanked(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("applyset-") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + "applyset-".len()..];
        let id_len = tail.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_').count();
        if id_len >= 46 && tail[..id_len].ends_with("-v1") {
            out.push_str("<applyset-id>");
            rest = &tail[id_len..];
        } else {
            out.push_str("applyset-");
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// A command's output with `namespace` written `NS` and server values blanked, so two
/// namespaces' outputs compare.
pub fn normalized(text: &str, namespace: &str) -> String {
    server_values_blanked(&text.replace(namespace, "NS"))
}

/// The lines of a command's output.
pub fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}
