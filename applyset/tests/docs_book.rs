//! The documentation holds together: the README and the book in `docs/` (mdBook).
//!
//! * every relative link of `README.md` and of `docs/src/**/*.md` names a file that exists, and
//!   every `#anchor` a heading of its page (ids as mdBook makes them: lowercase, whitespace to
//!   `-`, characters other than alphanumerics, `-` and `_` dropped, a repeated id suffixed
//!   `-1`, `-2`, …); links to this repository's files on GitHub name files that exist; a page
//!   of the book links only inside `docs/src` (anything else is not part of the built book);
//! * every page of `docs/src` is listed in `SUMMARY.md`, and every page it lists exists;
//! * the README stays a front door: at most 250 lines;
//! * the layout page's module map names every folder of `applyset/src` and of
//!   `applyset/src/operator`, and every path it names exists.
//!
//! `scripts/build-docs` builds the book itself, with mdBook's warnings as errors.

mod support;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use regex::Regex;

/// The README's length, at most: a front door, with everything else in the book.
const README_MAX_LINES: usize = 250;

/// Links of this form name a file of this repository as GitHub shows it.
const REPOSITORY_URL: &str = "https://github.com/applyset/applyset/";

/// The page whose module map must name every folder of the code.
const LAYOUT_PAGE: &str = "docs/src/development/layout.md";

/// The folders whose subfolders the module map must each name.
const MAPPED_FOLDERS: [&str; 2] = ["applyset/src", "applyset/src/operator"];

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The Markdown files of the book's source, recursively, as paths from the repository root.
fn book_pages(root: &Path) -> Vec<PathBuf> {
    let pages = support::files_under(&[root.join("docs/src")], "md");
    pages.into_iter().map(|path| path.strip_prefix(root).expect("under the root").to_path_buf()).collect()
}

/// The text outside fenced code blocks and HTML comments, with inline code spans blanked, line
/// for line (so that a problem can be reported by its line).
fn prose_lines(text: &str) -> Vec<String> {
    let comments = Regex::new(r"(?s)<!--.*?-->").expect("valid");
    let without_comments = comments.replace_all(text, |caught: &regex::Captures| {
        // Keep the line breaks, so that line numbers stay right.
        "\n".repeat(caught[0].matches('\n').count())
    });
    let code_spans = Regex::new(r"``.*?``|`[^`]*`").expect("valid");
    let mut fence: Option<String> = None;
    let mut lines = Vec::new();
    for line in without_comments.lines() {
        let trimmed = line.trim_start();
        let marker: String = trimmed.chars().take_while(|&c| c == '`' || c == '~').collect();
        match &fence {
            Some(open) if marker.len() >= open.len() && marker.starts_with(&open[..1]) => {
                fence = None;
                lines.push(String::new());
            }
            Some(_) => lines.push(String::new()),
            None if marker.len() >= 3 => {
                fence = Some(marker);
                lines.push(String::new());
            }
            None => lines.push(code_spans.replace_all(line, "``").into_owned()),
        }
    }
    lines
}

/// A heading's text as mdBook renders it, before the id is made of it: inline code without its
/// backticks, links as their text, no emphasis markers or HTML tags.
fn heading_text(raw: &str) -> String {
    let links = Regex::new(r"!?\[([^\]]*)\]\([^)]*\)").expect("valid");
    let tags = Regex::new(r"<[^>]+>").expect("valid");
    let text = links.replace_all(raw, "$1");
    let text = tags.replace_all(&text, "");
    text.replace(['`', '*'], "")
}

/// mdBook's id of a heading: lowercase; alphanumerics, `-` and `_` kept; whitespace to `-`;
/// everything else dropped.
fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// The ids of a page's headings (ATX and setext), each made unique as mdBook does.
fn anchors(text: &str) -> HashSet<String> {
    let atx = Regex::new(r"^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$").expect("valid");
    let explicit = Regex::new(r"^(.*?)\s*\{#([^}\s]+)\}\s*$").expect("valid");
    let setext = Regex::new(r"^ {0,3}(=+|-+)\s*$").expect("valid");
    let mut headings = Vec::new();
    let mut fence: Option<char> = None;
    let mut previous = "";
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            let marker = trimmed.chars().next().expect("not empty");
            fence = match fence {
                Some(open) if open == marker => None,
                None => Some(marker),
                other => other,
            };
            previous = "";
            continue;
        }
        if fence.is_some() {
            continue;
        }
        if let Some(caught) = atx.captures(line) {
            headings.push(caught[1].to_string());
        } else if setext.is_match(line) && is_paragraph_line(previous) {
            headings.push(previous.trim().to_string());
        }
        previous = line;
    }
    let mut used = HashSet::new();
    for heading in headings {
        let id = match explicit.captures(&heading) {
            Some(caught) => caught[2].to_string(),
            None => slug(&heading_text(&heading)),
        };
        let mut unique = id.clone();
        let mut counter = 1;
        while !used.insert(unique.clone()) {
            unique = format!("{id}-{counter}");
            counter += 1;
        }
    }
    used
}

/// Whether a line can be the text of a setext heading (not blank, not a list item, table row,
/// quote or heading of its own).
fn is_paragraph_line(line: &str) -> bool {
    let trimmed = line.trim();
    !trimmed.is_empty()
        && !trimmed.starts_with(['#', '|', '>', '-', '*', '+'])
        && !trimmed.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// `a/./b/../c` as `a/c`, without touching the file system (a missing file stays missing).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Every link target of a page, with its line number: inline links and images `](target)`,
/// and reference definitions `[name]: target`.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let inline = Regex::new(r#"\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)"#).expect("valid");
    let definition = Regex::new(r"^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s.*)?$").expect("valid");
    let mut targets = Vec::new();
    for (index, line) in prose_lines(text).iter().enumerate() {
        for caught in inline.captures_iter(line) {
            targets.push((index + 1, caught[1].to_string()));
        }
        if let Some(caught) = definition.captures(line) {
            targets.push((index + 1, caught[1].to_string()));
        }
    }
    targets
}

/// What is wrong with the links of one page (`page` from the repository root), each problem a
/// line of text.
fn link_problems(root: &Path, page: &Path, anchors_of: &mut HashMap<PathBuf, HashSet<String>>) -> Vec<String> {
    let text = read(&root.join(page));
    let in_book = page.starts_with("docs/src");
    let folder = page.parent().expect("a page is in a folder").to_path_buf();
    let mut problems = Vec::new();
    for (line, target) in link_targets(&text) {
        let at = format!("{}:{line}: {target}", page.display());
        let (file_part, anchor) = match target.split_once('#') {
            Some((file, anchor)) => (file.to_string(), Some(anchor.to_string())),
            None => (target.clone(), None),
        };
        let file = if let Some(path) = file_part.strip_prefix(REPOSITORY_URL) {
            // blob/<ref>/<path> or tree/<ref>/<path>: the path must exist here.
            let mut parts = path.splitn(3, '/');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("blob" | "tree" | "edit"), Some(_), Some(path)) => PathBuf::from(path),
                _ => continue,
            }
        } else if file_part.contains("://") || file_part.starts_with("mailto:") {
            continue;
        } else if file_part.is_empty() {
            page.to_path_buf()
        } else if file_part.starts_with('/') {
            problems.push(format!("{at}: an absolute path; links are relative to their page"));
            continue;
        } else {
            let resolved = normalise(&folder.join(&file_part));
            if in_book && !resolved.starts_with("docs/src") {
                problems.push(format!(
                    "{at}: leaves docs/src, so the built book cannot serve it; link {REPOSITORY_URL}blob/main/{} instead",
                    resolved.display()
                ));
                continue;
            }
            resolved
        };
        let on_disk = root.join(&file);
        if !on_disk.exists() {
            problems.push(format!("{at}: {} does not exist", file.display()));
            continue;
        }
        let Some(anchor) = anchor.filter(|a| !a.is_empty()) else { continue };
        if on_disk.extension().is_none_or(|e| e != "md") {
            problems.push(format!("{at}: an anchor into a file that is not Markdown"));
            continue;
        }
        let known = anchors_of.entry(file.clone()).or_insert_with(|| anchors(&read(&on_disk)));
        if !known.contains(&anchor) {
            let mut near: Vec<_> = known.iter().filter(|a| a.contains(&anchor[..anchor.len().min(6)])).collect();
            near.sort();
            problems.push(format!("{at}: no heading of {} has the id `{anchor}` (close: {near:?})", file.display()));
        }
    }
    problems
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let root = support::repo_root();
    let mut pages = vec![PathBuf::from("README.md")];
    pages.extend(book_pages(&root));
    let mut anchors_of = HashMap::new();
    let problems: Vec<String> = pages.iter().flat_map(|page| link_problems(&root, page, &mut anchors_of)).collect();
    assert!(problems.is_empty(), "{} broken link(s):\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_summary_lists_every_page_of_the_book_and_only_pages_that_exist() {
    let root = support::repo_root();
    let summary = read(&root.join("docs/src/SUMMARY.md"));
    let entry = Regex::new(r"\]\(([^)#\s]+\.md)\)").expect("valid");
    let listed: BTreeSet<PathBuf> =
        entry.captures_iter(&summary).map(|caught| normalise(&Path::new("docs/src").join(&caught[1]))).collect();
    let pages: BTreeSet<PathBuf> =
        book_pages(&root).into_iter().filter(|page| page != Path::new("docs/src/SUMMARY.md")).collect();
    let missing: Vec<_> = listed.iter().filter(|page| !root.join(page).is_file()).collect();
    let unlisted: Vec<_> = pages.difference(&listed).collect();
    assert!(missing.is_empty(), "SUMMARY.md lists pages that do not exist: {missing:?}");
    assert!(
        unlisted.is_empty(),
        "pages of docs/src that SUMMARY.md does not list (mdBook would not build them): {unlisted:?}"
    );
}

#[test]
fn the_readme_is_a_front_door() {
    let root = support::repo_root();
    let lines = read(&root.join("README.md")).lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; at most {README_MAX_LINES}: move the detail into the book (docs/src)"
    );
}

#[test]
fn the_layout_page_maps_every_folder_of_the_code() {
    let root = support::repo_root();
    let text = read(&root.join(LAYOUT_PAGE));
    let path_like = Regex::new(r"^[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)*/?$").expect("valid");
    let code_span = Regex::new(r"`([^`]+)`").expect("valid");
    let named: BTreeSet<String> = code_span
        .captures_iter(&text)
        .map(|caught| caught[1].to_string())
        .filter(|span| span.contains('/') && path_like.is_match(span))
        .collect();
    let missing: Vec<_> = named.iter().filter(|path| !root.join(path).exists()).collect();
    assert!(missing.is_empty(), "{LAYOUT_PAGE} names paths that do not exist: {missing:?}");
    let named_folders: HashSet<&str> = named.iter().map(|path| path.trim_end_matches('/')).collect();
    let mut unmapped = Vec::new();
    for folder in MAPPED_FOLDERS {
        let entries = std::fs::read_dir(root.join(folder)).unwrap_or_else(|e| panic!("{folder}: {e}"));
        for entry in entries.flatten() {
            if entry.path().is_dir() {
                let path = format!("{folder}/{}", entry.file_name().to_string_lossy());
                if !named_folders.contains(path.as_str()) {
                    unmapped.push(path);
                }
            }
        }
    }
    unmapped.sort();
    assert!(unmapped.is_empty(), "{LAYOUT_PAGE} does not name these folders (add a row each): {unmapped:?}");
}

#[test]
fn ids_are_made_as_mdbook_makes_them() {
    assert_eq!(slug(&heading_text("The web UI: `applyset ui`")), "the-web-ui-applyset-ui");
    assert_eq!(slug(&heading_text("Output: -o")), "output--o");
    assert_eq!(slug(&heading_text("What an ApplySet's own writes cost")), "what-an-applysets-own-writes-cost");
    assert_eq!(slug(&heading_text("Memory at 20,000 objects")), "memory-at-20000-objects");
    let ids = anchors("# A\n\n## A\n\n```sh\n# not a heading\n```\n\nB\n---\n\n## A {#custom}\n");
    let expected: HashSet<String> = ["a", "a-1", "b", "custom"].iter().map(|s| s.to_string()).collect();
    assert_eq!(ids, expected);
}
