//! The editor of `edit-last-applied`, as kubectl's `cmd/util/editor` runs it: which program
//! (`$KUBE_EDITOR`, else `$EDITOR`, else `vi`; a value with quotes or backslashes goes through
//! `$SHELL -c`, one with spaces is split on them), the temporary file it edits
//! (`<program>-edit-<random>.yaml|.json` in the temp directory), the header of the file, and the
//! checks of the edited text.

use std::io::Write;
use std::path::{Path, PathBuf};

use applyset_merge::Value;
use applyset_merge::value::go_quote;

use super::indent::go_indent;

use crate::causes::with_causes;

/// Why the edit stopped, in kubectl's words.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("no editor defined, can't open {0}")]
    NoEditor(String),
    /// The program could not be found.
    #[error("unable to launch the editor {}", go_quote(.0))]
    Launch(String),
    /// The program failed (or could not be started).
    #[error("there was a problem with the editor {}", go_quote(.0))]
    Failed(String),
    /// The temporary file could not be written or read back.
    #[error("{}", .path.display())]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file was saved unchanged after an error was shown in it.
    #[error("Edit cancelled, no valid changes were saved.")]
    NoValidChanges,
    /// An edited object whose `metadata.uid` matches none of those opened.
    #[error("no original object found for {0}")]
    NoOriginal(String),
    /// `-o` other than json or yaml: the editor's printer has none other.
    #[error(r#"unable to match a printer suitable for the output format {}, allowed formats are: json,yaml"#, go_quote(.0))]
    Format(String),
}

/// The program to run and how (kubectl's `NewDefaultEditor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Editor {
    args: Vec<String>,
    shell: bool,
}

impl Editor {
    /// From the environment: `$KUBE_EDITOR`, else `$EDITOR`, else `vi`.
    pub fn from_env() -> Editor {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Editor::choose(var("KUBE_EDITOR").or_else(|| var("EDITOR")), var("SHELL"))
    }

    /// The editor for the first non-empty editor variable, with `$SHELL` (default
    /// `/bin/bash`) for one the shell must read.
    pub fn choose(editor: Option<String>, shell: Option<String>) -> Editor {
        let editor = editor.unwrap_or_else(|| "vi".to_owned());
        if !editor.contains(' ') {
            return Editor { args: vec![editor], shell: false };
        }
        if !editor.contains(['"', '\'', '\\']) {
            return Editor { args: editor.split(' ').map(str::to_owned).collect(), shell: false };
        }
        let shell = shell.unwrap_or_else(|| "/bin/bash".to_owned());
        Editor { args: vec![shell, "-c".to_owned(), editor], shell: true }
    }

    /// The command line for `path` (in the shell's command, quoted as Go quotes it).
    fn command_line(&self, path: &Path) -> Vec<String> {
        let mut args = self.args.clone();
        let path = path.display().to_string();
        match args.last_mut() {
            Some(last) if self.shell => *last = format!("{last} {}", go_quote(&path)),
            _ => args.push(path),
        }
        args
    }

    /// Runs the editor on `path` with the terminal (standard streams inherited), until it exits.
    fn launch(&self, path: &Path) -> Result<(), EditError> {
        if self.args.is_empty() {
            return Err(EditError::NoEditor(path.display().to_string()));
        }
        let absolute = std::path::absolute(path).map_err(|source| EditError::File { path: path.to_owned(), source })?;
        let args = self.command_line(&absolute);
        let _ = std::io::stdout().flush();
        let joined = self.args.join(" ");
        match std::process::Command::new(&args[0]).args(&args[1..]).status() {
            Ok(status) if status.success() => Ok(()),
            // Go's `exec.ErrNotFound`: a bare name that is not on PATH.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound && !args[0].contains('/') => {
                Err(EditError::Launch(joined))
            }
            _ => Err(EditError::Failed(joined)),
        }
    }

    /// Writes `content` to a new temporary file `<prefix><random><suffix>`, runs the editor on
    /// it and reads it back: the edited bytes and the file (left in place). The file is also
    /// returned when the editor failed, to be reported.
    pub fn edit_temp_file(
        &self,
        prefix: &str,
        suffix: &str,
        content: &[u8],
    ) -> (Result<Vec<u8>, EditError>, Option<PathBuf>) {
        let (path, mut file) = match create_temp(prefix, suffix) {
            Ok(created) => created,
            Err(error) => return (Err(error), None),
        };
        let file_error = |source| EditError::File { path: path.clone(), source };
        if let Err(source) = file.write_all(content).and_then(|()| file.flush()) {
            let _ = std::fs::remove_file(&path);
            return (Err(file_error(source)), Some(path));
        }
        drop(file);
        let edited = self.launch(&path).and_then(|()| std::fs::read(&path).map_err(file_error));
        (edited, Some(path))
    }
}

/// Go's `os.CreateTemp("", prefix+"*"+suffix)`: a new file in the temp directory
/// (`$TMPDIR`, else `/tmp`), named with a random decimal number.
fn create_temp(prefix: &str, suffix: &str) -> Result<(PathBuf, std::fs::File), EditError> {
    let dir = std::env::temp_dir();
    let mut last = None;
    for _ in 0..10_000 {
        let path = dir.join(format!("{prefix}{}{suffix}", fastrand::u32(..)));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        match options.open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => last = Some((path, error)),
            Err(source) => return Err(EditError::File { path, source }),
        }
    }
    let (path, source) = last.expect("every attempt found a file");
    Err(EditError::File { path, source })
}

/// A reason the file is opened again, shown in its header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reason {
    pub head: String,
    pub other: Vec<String>,
}

/// The header of the file to edit, with the reasons it is opened again.
pub fn header(reasons: &[Reason]) -> String {
    let mut out = String::from(
        "# Please edit the 'last-applied-configuration' annotations below.\n# Lines beginning with a '#' will be ignored, and an empty file will abort the edit.\n#\n",
    );
    for reason in reasons {
        let colon = if reason.other.is_empty() { "" } else { ":" };
        out.push_str(&format!("# {}{colon}\n", hash_on_line_break(&reason.head)));
        for other in &reason.other {
            out.push_str(&format!("# * {}\n", hash_on_line_break(other)));
        }
        out.push_str("#\n");
    }
    out
}

/// kubectl's `hashOnLineBreak`: every line break not followed by `#` (nor at the very end)
/// followed by `# `.
fn hash_on_line_break(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    for (at, c) in text.char_indices() {
        if c == '\n' && bytes.get(at + 1).is_some_and(|&next| next != b'#') {
            out.push_str("\n# ");
        } else {
            out.push(c);
        }
    }
    out
}

/// Every `\n` written as `\r\n` (kubectl's CRLF writer for `--windows-line-endings`).
pub fn crlf(text: &str) -> String {
    text.replace('\n', "\r\n")
}

/// Whether a line holds something other than blanks or a comment (kubectl's `hasLines`).
pub fn has_lines(text: &[u8]) -> bool {
    String::from_utf8_lossy(text).lines().any(|line| {
        let line = line.trim();
        !line.is_empty() && !line.starts_with('#')
    })
}

/// kubectl's client-side check of the edited text (`ValidateBytes`, where the apiserver
/// validates fields itself): a YAML or JSON object with a string `apiVersion` and `kind`.
/// The error is Go's message.
pub fn validate(stripped: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(stripped);
    let value = if text.trim_start().starts_with('{') {
        go_indent(&text, "").map_err(|e| with_causes(&e))?;
        Value::from_json_str(&text).map_err(|e| e.0)?
    } else {
        crate::manifest::yaml::parse_document_limited(&text, None).map_err(|error| match error.go_line {
            Some(line) => format!("yaml: line {line}: {}", error.message),
            None => format!("yaml: {}", error.message),
        })?
    };
    let Some(fields) = value.as_object() else { return Err("invalid object to validate".to_owned()) };
    let mut errors = Vec::new();
    match fields.get("apiVersion") {
        None | Some(Value::Null) => errors.push("apiVersion not set".to_owned()),
        Some(Value::String(api_version)) if api_version.matches('/').count() > 1 => {
            errors.push(format!("unexpected GroupVersion string: {api_version}"));
        }
        Some(Value::String(_)) => {}
        Some(_) => errors.push("apiVersion isn't string type".to_owned()),
    }
    match fields.get("kind") {
        None | Some(Value::Null) => errors.push("kind not set".to_owned()),
        Some(Value::String(_)) => {}
        Some(_) => errors.push("kind isn't string type".to_owned()),
    }
    match crate::manifest::go_aggregate(errors.iter().map(String::as_str)) {
        Some(message) => Err(message),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_editor_comes_from_the_environment_as_kubectl_reads_it() {
        assert_eq!(Editor::choose(None, None).args, ["vi"]);
        assert_eq!(Editor::choose(Some("code --wait".into()), None).args, ["code", "--wait"]);
        let shell = Editor::choose(Some("emacs -nw 'a b'".into()), Some("/bin/sh".into()));
        assert!(shell.shell);
        assert_eq!(
            shell.command_line(Path::new("/tmp/x y.yaml")),
            ["/bin/sh", "-c", "emacs -nw 'a b' \"/tmp/x y.yaml\""]
        );
        assert_eq!(Editor::choose(Some("nano".into()), None).command_line(Path::new("/tmp/f")), ["nano", "/tmp/f"]);
        assert_eq!(Editor::choose(Some("a\\b c".into()), None).args[0], "/bin/bash");
    }

    #[test]
    fn header_with_reasons() {
        let reasons = [
            Reason { head: "configmaps \"a\" was not valid".into(), other: vec!["<nil>: bad\nsecond".into()] },
            Reason {
                head: "The edited file had a syntax error: x\nensure CRDs are installed first".into(),
                other: vec![],
            },
        ];
        assert_eq!(
            header(&reasons),
            "# Please edit the 'last-applied-configuration' annotations below.\n# Lines beginning with a '#' will be ignored, and an empty file will abort the edit.\n#\n# configmaps \"a\" was not valid:\n# * <nil>: bad\n# second\n#\n# The edited file had a syntax error: x\n# ensure CRDs are installed first\n#\n"
        );
        assert_eq!(hash_on_line_break("a\n#b\nc\n"), "a\n#b\n# c\n");
    }

    #[test]
    fn checks_of_the_edited_text() {
        assert!(has_lines(b"# a\n\n  x: 1\n"));
        assert!(!has_lines(b"# a\n   \n  # b\n"));
        assert_eq!(validate(b"apiVersion: v1\nkind: ConfigMap\n"), Ok(()));
        assert_eq!(validate(b"apiVersion: v1\nmetadata: {}\n"), Err("kind not set".into()));
        assert_eq!(validate(b"metadata: {}\n"), Err("[apiVersion not set, kind not set]".into()));
        assert_eq!(validate(b"null"), Err("invalid object to validate".into()));
        assert_eq!(validate(b"{\"apiVersion\": 1, \"kind\": \"A\"}"), Err("apiVersion isn't string type".into()));
        assert_eq!(validate(b"{\"a\": }"), Err("invalid character '}' looking for beginning of value".into()));
        assert_eq!(validate(b"apiVersion: a/b/c\nkind: X\n"), Err("unexpected GroupVersion string: a/b/c".into()));
        assert_eq!(
            validate(b"apiVersion: v1\ndata: [: x\n"),
            Err("yaml: line 1: did not find expected node content".into())
        );
        assert_eq!(crlf("a\nb\n"), "a\r\nb\r\n");
    }
}
