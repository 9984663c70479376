//! The Markdown the reference pages are written in: tables whose cells hold doc comments, and
//! code spans. mdBook reads GitHub-flavoured Markdown, where a table row is one line and a `|`
//! ends a cell (inside a code span too) unless escaped.

use std::fmt::Write;

/// A table: a header row and rows of as many cells, each cell Markdown already.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table { header: header.iter().map(|title| (*title).to_owned()).collect(), rows: Vec::new() }
    }

    /// Adds a row of cells written as [`cell`] writes them. Panics when the row has not as many
    /// cells as the header: a generator bug, which would shift every later column.
    pub fn row(&mut self, cells: Vec<String>) {
        assert_eq!(cells.len(), self.header.len(), "a row of {cells:?} under {:?}", self.header);
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as Markdown, one line per row, ending with a newline.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let line = |out: &mut String, cells: &[String]| {
            out.push('|');
            for cell in cells {
                // An empty cell still takes a space on each side, as the header's does.
                let _ = write!(out, " {cell} |");
            }
            out.push('\n');
        };
        line(&mut out, &self.header);
        line(&mut out, &vec!["---".to_owned(); self.header.len()]);
        for row in &self.rows {
            line(&mut out, row);
        }
        out
    }
}

/// Text (a doc comment, a help message) made into one table cell: lines wrapped in the source
/// joined by a space, paragraphs by `<br><br>`, `|` escaped, and `<`, `>` and `&` outside code
/// spans made entities, so that `<tool>/<version>` reads as text rather than an HTML tag.
pub fn cell(text: &str) -> String {
    let paragraphs: Vec<String> = text
        .trim()
        .split("\n\n")
        .map(|paragraph| paragraph.lines().map(str::trim).filter(|line| !line.is_empty()).collect::<Vec<_>>().join(" "))
        .filter(|paragraph| !paragraph.is_empty())
        .collect();
    escape_outside_code(&paragraphs.join("\n\n")).replace('|', "\\|").replace("\n\n", "<br><br>")
}

/// `text` as a code span (a cell's field name, a flag, a default value): wrapped in as many
/// backticks as it needs, `|` escaped for the table.
pub fn code(text: &str) -> String {
    let longest_run = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest_run + 1);
    // A span that starts or ends with a backtick needs a space between it and the fence.
    let padding = if text.starts_with('`') || text.ends_with('`') { " " } else { "" };
    format!("{fence}{padding}{}{padding}{fence}", text.replace('|', "\\|"))
}

/// `values` as code spans separated by commas: `` `a`, `b` ``.
pub fn code_list<S: AsRef<str>>(values: &[S]) -> String {
    values.iter().map(|value| code(value.as_ref())).collect::<Vec<_>>().join(", ")
}

/// The characters HTML would read outside code spans (single-backtick spans, as doc comments
/// write them) replaced by entities; an unclosed backtick leaves the rest as it is.
fn escape_outside_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    let mut pieces = text.split('`').peekable();
    while let Some(piece) = pieces.next() {
        if in_code {
            out.push_str(piece);
        } else {
            out.push_str(&piece.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;"));
        }
        if pieces.peek().is_some() {
            out.push('`');
        }
        in_code = !in_code;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_has_a_header_a_rule_and_one_line_per_row() {
        let mut table = Table::new(&["Field", "Description"]);
        table.row(vec![code("spec.a"), cell("First.")]);
        table.row(vec![code("spec.b"), String::new()]);
        assert_eq!(table.render(), "| Field | Description |\n| --- | --- |\n| `spec.a` | First. |\n| `spec.b` |  |\n");
    }

    #[test]
    #[should_panic(expected = "under")]
    fn a_row_of_the_wrong_width_is_refused() {
        Table::new(&["One", "Two"]).row(vec!["only one".into()]);
    }

    #[test]
    fn a_cell_is_one_line_with_pipes_escaped() {
        assert_eq!(
            cell("  Wrapped\n  over lines.\n\nA second | paragraph.\n"),
            "Wrapped over lines.<br><br>A second \\| paragraph."
        );
        assert_eq!(cell("`a|b` or c"), "`a\\|b` or c");
    }

    #[test]
    fn html_is_escaped_outside_code_spans_only() {
        assert_eq!(
            cell("values read <redacted> & `<tool>/<version>`"),
            "values read &lt;redacted&gt; &amp; `<tool>/<version>`"
        );
        assert_eq!(cell("an unclosed `<span"), "an unclosed `<span");
    }

    #[test]
    fn code_spans_take_enough_backticks() {
        assert_eq!(code("5m"), "`5m`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x`"), "`` `x` ``");
        assert_eq!(code("a|b"), "`a\\|b`");
        assert_eq!(code_list(&["Delete", "Orphan"]), "`Delete`, `Orphan`");
    }
}
