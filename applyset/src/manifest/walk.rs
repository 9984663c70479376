//! Which files `kubectl apply -f … [-R]` reads (`FilenameParam`, `Builder.Path`,
//! `ExpandPathsToFileVisitors`), in kubectl's order.

use applyset_merge::value::go_quote;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::causes::{Chain, with_causes};

/// The extensions kept when walking a directory (compared exactly, as Go's `filepath.Ext`).
pub const FILE_EXTENSIONS: [&str; 3] = [".json", ".yaml", ".yml"];

/// One input kubectl would read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Stdin,
    File(PathBuf),
}

/// The directory relative paths are read from: the process's working directory (empty), or the
/// one a caller names so that every path it reports stays relative to it (the controller's
/// checkout). Absolute paths are read as they are.
#[derive(Debug, Clone, Copy)]
pub struct Root<'a>(pub &'a Path);

impl Root<'_> {
    /// The working directory.
    pub fn current() -> Root<'static> {
        Root(Path::new(""))
    }

    /// Where `path`, as reported, is on disk.
    pub fn at(&self, path: impl AsRef<Path>) -> PathBuf {
        self.0.join(path)
    }
}

/// Expands `-f` values into inputs, in order, with kubectl's errors for values that cannot be
/// expanded. Later values are still expanded after an error, so every problem is reported.
/// Inputs and errors name paths as given, relative to `root`.
pub fn expand(args: &[PathBuf], recursive: bool, root: Root<'_>) -> (Vec<Input>, Vec<String>) {
    let mut inputs = Vec::new();
    let mut errors = Vec::new();
    let mut stdin_used = false;
    for arg in args {
        let text = arg.to_string_lossy();
        if text == "-" {
            if stdin_used {
                errors.push("standard input cannot be used for multiple arguments".to_owned());
            } else {
                stdin_used = true;
                inputs.push(Input::Stdin);
            }
            continue;
        }
        if text.starts_with("http://") || text.starts_with("https://") {
            errors.push(format!(
                "reading manifests from a URL is not supported: {} (download it and pass the file)",
                go_quote(&text)
            ));
            continue;
        }
        let matches = match expand_if_pattern(arg, root) {
            Ok(m) => m,
            Err(e) => {
                errors.push(with_causes(&e));
                continue;
            }
        };
        for path in &matches {
            match fs::metadata(root.at(path)) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    errors.push(format!("the path {} does not exist", go_quote(&path.to_string_lossy())));
                    continue;
                }
                Err(e) => {
                    errors.push(format!(
                        "the path {} cannot be accessed: {e}",
                        go_quote(&path.to_string_lossy()),
                        e = Chain(&e)
                    ));
                    continue;
                }
                Ok(_) => {}
            }
            if let Err(e) = walk(path, recursive, root, &mut inputs) {
                errors.push(format!("error reading {}: {e}", go_quote(&path.to_string_lossy()), e = Chain(&e)));
            }
        }
        if inputs.is_empty() && errors.is_empty() {
            let list: Vec<String> = matches.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            errors.push(format!(
                "error reading [{}]: recognized file extensions are [{}]",
                list.join(" "),
                FILE_EXTENSIONS.join(" ")
            ));
        }
    }
    (inputs, errors)
}

/// A `-f` value that names no path, worded as kubectl's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum PatternError {
    /// Neither a path nor a pattern that matches one.
    #[error("the path {} does not exist", go_quote(pattern))]
    NoMatch { pattern: String },
    /// Not a path, and not a valid pattern.
    #[error("pattern {} is not valid", go_quote(pattern))]
    Invalid {
        pattern: String,
        #[source]
        source: BadPattern,
    },
}

/// kubectl's `expandIfFilePattern`: a path that does not exist is tried as a glob.
fn expand_if_pattern(arg: &Path, root: Root<'_>) -> Result<Vec<PathBuf>, PatternError> {
    match fs::metadata(root.at(arg)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        _ => return Ok(vec![arg.to_path_buf()]),
    }
    let pattern = arg.to_string_lossy();
    match glob(&pattern, root) {
        Ok(m) if m.is_empty() => Err(PatternError::NoMatch { pattern: pattern.into_owned() }),
        Ok(m) => Ok(m),
        Err(source) => Err(PatternError::Invalid { pattern: pattern.into_owned(), source }),
    }
}

/// Go's `filepath.Walk` with kubectl's callback. The root is not followed if it is a symbolic
/// link (it is then read as a file); entries are visited in byte order of their names.
fn walk(top: &Path, recursive: bool, root: Root<'_>, inputs: &mut Vec<Input>) -> io::Result<()> {
    let meta = fs::symlink_metadata(root.at(top))?;
    if !meta.is_dir() {
        // Named explicitly: read whatever its extension.
        inputs.push(Input::File(top.to_path_buf()));
        return Ok(());
    }
    walk_dir(top, recursive, root, inputs)
}

fn walk_dir(dir: &Path, recursive: bool, root: Root<'_>, inputs: &mut Vec<Input>) -> io::Result<()> {
    let mut names: Vec<_> = fs::read_dir(root.at(dir))?.map(|e| e.map(|e| e.file_name())).collect::<Result<_, _>>()?;
    names.sort_by(|a, b| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
    for name in names {
        let path = go_join(dir, &name);
        let meta = fs::symlink_metadata(root.at(&path))?;
        if meta.is_dir() {
            if recursive {
                walk_dir(&path, recursive, root, inputs)?;
            }
            continue;
        }
        if FILE_EXTENSIONS.contains(&go_ext(&name.to_string_lossy())) {
            inputs.push(Input::File(path));
        }
    }
    Ok(())
}

/// Go's `filepath.Join` (which `filepath.Walk` names entries with): the joined path, cleaned
/// lexically (`./d` and `a.yaml` make `d/a.yaml`, `.` and `a.yaml` make `a.yaml`).
fn go_join(dir: &Path, name: &std::ffi::OsStr) -> PathBuf {
    use std::path::Component;
    let joined = dir.join(name);
    let mut parts: Vec<Component<'_>> = Vec::new();
    for component in joined.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match parts.last() {
                Some(Component::Normal(_)) => {
                    parts.pop();
                }
                // `..` at the root stays the root.
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => parts.push(component),
            },
            other => parts.push(other),
        }
    }
    if parts.is_empty() { PathBuf::from(".") } else { parts.iter().collect() }
}

/// Whether walking `dir` as kubectl would finds any manifest file (for the controller's
/// `allowEmpty`: kubectl treats a directory without one as an error).
pub fn holds_manifests(dir: &Path, recursive: bool) -> io::Result<bool> {
    let mut inputs = Vec::new();
    walk(dir, recursive, Root::current(), &mut inputs)?;
    Ok(!inputs.is_empty())
}

/// Go's `filepath.Ext` on a file name: from the last `.` on (so `.yaml` has extension `.yaml`).
fn go_ext(name: &str) -> &str {
    name.rfind('.').map_or("", |i| &name[i..])
}

// ---------------------------------------------------------------------------------------------
// Go's filepath.Glob / filepath.Match (Unix flavour).

/// Go's `filepath.ErrBadPattern`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("syntax error in pattern")]
struct BadPattern;

fn has_meta(s: &str) -> bool {
    s.contains(['*', '?', '[', '\\'])
}

fn glob(pattern: &str, root: Root<'_>) -> Result<Vec<PathBuf>, BadPattern> {
    glob_depth(pattern, root, 0)
}

fn glob_depth(pattern: &str, root: Root<'_>, depth: usize) -> Result<Vec<PathBuf>, BadPattern> {
    if depth > 10_000 {
        return Err(BadPattern);
    }
    go_match(pattern, "")?;
    if !has_meta(pattern) {
        return Ok(if fs::symlink_metadata(root.at(pattern)).is_ok() { vec![PathBuf::from(pattern)] } else { vec![] });
    }
    let (dir, file) = match pattern.rfind('/') {
        Some(i) => (&pattern[..=i], &pattern[i + 1..]),
        None => ("", pattern),
    };
    let dir = match dir {
        "" => ".".to_owned(),
        "/" => "/".to_owned(),
        d => d[..d.len() - 1].to_owned(),
    };
    let mut matches = Vec::new();
    if !has_meta(&dir) {
        glob_in(&dir, file, root, &mut matches)?;
        return Ok(matches);
    }
    if dir == pattern {
        return Err(BadPattern);
    }
    for d in glob_depth(&dir, root, depth + 1)? {
        glob_in(&d.to_string_lossy(), file, root, &mut matches)?;
    }
    Ok(matches)
}

fn glob_in(dir: &str, pattern: &str, root: Root<'_>, matches: &mut Vec<PathBuf>) -> Result<(), BadPattern> {
    let Ok(meta) = fs::metadata(root.at(dir)) else { return Ok(()) };
    if !meta.is_dir() {
        return Ok(());
    }
    let Ok(entries) = fs::read_dir(root.at(dir)) else { return Ok(()) };
    let mut names: Vec<String> =
        entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    for name in names {
        if go_match(pattern, &name)? {
            // Go's filepath.Join cleans "./x" to "x".
            matches.push(if dir == "." { PathBuf::from(&name) } else { Path::new(dir).join(&name) });
        }
    }
    Ok(())
}

/// Go's `filepath.Match`: `*` (no `/`), `?`, `[...]` classes with `^` and ranges, `\` escapes.
/// The whole pattern is checked for syntax even when an early part fails to match.
fn go_match(pattern: &str, name: &str) -> Result<bool, BadPattern> {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    validate(&p)?;
    Ok(match_here(&p, &n))
}

fn validate(p: &[char]) -> Result<(), BadPattern> {
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '\\' => {
                if i + 1 >= p.len() {
                    return Err(BadPattern);
                }
                i += 2;
            }
            '[' => i = class_end(p, i)?,
            _ => i += 1,
        }
    }
    Ok(())
}

/// Index just past the class starting at `p[start] == '['`.
fn class_end(p: &[char], start: usize) -> Result<usize, BadPattern> {
    let mut i = start + 1;
    if p.get(i) == Some(&'^') {
        i += 1;
    }
    let mut ranges = 0;
    loop {
        if p.get(i) == Some(&']') && ranges > 0 {
            return Ok(i + 1);
        }
        i = class_char(p, i)?.1;
        if p.get(i) == Some(&'-') {
            i = class_char(p, i + 1)?.1;
        }
        ranges += 1;
    }
}

fn class_char(p: &[char], i: usize) -> Result<(char, usize), BadPattern> {
    match p.get(i) {
        None | Some('-') | Some(']') => Err(BadPattern),
        Some('\\') => p.get(i + 1).map(|&c| (c, i + 2)).ok_or(BadPattern),
        Some(&c) => Ok((c, i + 1)),
    }
}

fn match_here(p: &[char], n: &[char]) -> bool {
    let (mut pi, mut ni) = (0, 0);
    // Backtracking point for the last `*`.
    let mut star: Option<(usize, usize)> = None;
    loop {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi + 1, ni));
                    pi += 1;
                    continue;
                }
                '?' if ni < n.len() && n[ni] != '/' => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                '[' if ni < n.len() && n[ni] != '/' => {
                    let end = class_end(p, pi).unwrap_or(p.len());
                    if class_matches(&p[pi + 1..end - 1], n[ni]) {
                        pi = end;
                        ni += 1;
                        continue;
                    }
                }
                '\\' if ni < n.len() && pi + 1 < p.len() && p[pi + 1] == n[ni] => {
                    pi += 2;
                    ni += 1;
                    continue;
                }
                c if !matches!(c, '?' | '[' | '\\') && ni < n.len() && c == n[ni] => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                _ => {}
            }
        } else if ni == n.len() {
            return true;
        }
        // Mismatch: let the last `*` swallow one more character (never a separator).
        match star {
            Some((sp, sn)) if sn < n.len() && n[sn] != '/' => {
                star = Some((sp, sn + 1));
                pi = sp;
                ni = sn + 1;
            }
            _ => return false,
        }
    }
}

fn class_matches(class: &[char], c: char) -> bool {
    let (negated, mut i) = if class.first() == Some(&'^') { (true, 1) } else { (false, 0) };
    let mut matched = false;
    while i < class.len() {
        let Ok((lo, next)) = class_char(class, i) else { break };
        i = next;
        let mut hi = lo;
        if let Some((h, next)) = (class.get(i) == Some(&'-')).then(|| class_char(class, i + 1).ok()).flatten() {
            hi = h;
            i = next;
        }
        if lo <= c && c <= hi {
            matched = true;
        }
    }
    matched != negated
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_named_as_go_joins_them() {
        let join = |dir: &str, name: &str| go_join(Path::new(dir), std::ffi::OsStr::new(name));
        assert_eq!(join(".", "a.yaml"), Path::new("a.yaml"));
        assert_eq!(join("./d", "a.yaml"), Path::new("d/a.yaml"));
        assert_eq!(join("d/", "a.yaml"), Path::new("d/a.yaml"));
        assert_eq!(join("../x/./y", "a.yaml"), Path::new("../x/y/a.yaml"));
        assert_eq!(join("d/../../e", "a.yaml"), Path::new("../e/a.yaml"));
        assert_eq!(join("/d/..", "a.yaml"), Path::new("/a.yaml"));
        assert_eq!(join("/..", "a.yaml"), Path::new("/a.yaml"));
    }

    #[test]
    fn go_match_semantics() {
        assert_eq!(go_match("*.yaml", "a.yaml"), Ok(true));
        assert_eq!(go_match("*.yaml", ".a.yaml"), Ok(true));
        assert_eq!(go_match("*.yaml", "a.yml"), Ok(false));
        assert_eq!(go_match("a*b*c", "axxbyyc"), Ok(true));
        assert_eq!(go_match("a*/b", "abc/b"), Ok(true));
        assert_eq!(go_match("a*", "a/b"), Ok(false));
        assert_eq!(go_match("?.json", "a.json"), Ok(true));
        assert_eq!(go_match("[a-c].yml", "b.yml"), Ok(true));
        assert_eq!(go_match("[^a-c].yml", "b.yml"), Ok(false));
        assert_eq!(go_match("[^a-c].yml", "d.yml"), Ok(true));
        assert_eq!(go_match("\\*", "*"), Ok(true));
        assert_eq!(go_match("[", "a"), Err(BadPattern));
        assert_eq!(go_match("[]a]", "a"), Err(BadPattern));
        assert_eq!(go_match("a\\", "a"), Err(BadPattern));
        assert_eq!(go_match("x*[", "y"), Err(BadPattern));
    }

    #[test]
    fn extensions_are_exact() {
        assert_eq!(go_ext("a.yaml"), ".yaml");
        assert_eq!(go_ext(".yaml"), ".yaml");
        assert_eq!(go_ext("a.YAML"), ".YAML");
        assert_eq!(go_ext("a.yaml.bak"), ".bak");
        assert_eq!(go_ext("Makefile"), "");
    }

    #[test]
    fn quoting() {
        assert_eq!(go_quote("a b"), "\"a b\"");
        assert_eq!(go_quote("a\"b\\"), "\"a\\\"b\\\\\"");
    }
}
