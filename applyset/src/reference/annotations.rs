//! `annotations.md`: every label, annotation and finalizer key the controller and the CLI read
//! or write, from the one table of them ([`crate::keys::KEYS`]).

use super::markdown::{Table, cell, code};
use crate::keys::{KEYS, KeyDoc};

pub fn page() -> String {
    page_of(KEYS)
}

pub fn page_of(keys: &[KeyDoc]) -> String {
    let mut out = super::header("applyset/src/keys.rs (its table `KEYS`)");
    out.push_str("# Labels and annotations reference\n\n");
    out.push_str(
        "Every label, annotation and finalizer key the controller and the `applyset` CLI read or write: \
         their own (`applyset.dev/`), kubectl's and KEP-3659's ApplySet keys, the do-not-prune marks of the \
         tools teams migrate from, and the cluster's own marks the controller recognises.\n\n",
    );
    let mut table = Table::new(&["Key", "Kind", "On", "Written by", "Read by", "Meaning"]);
    for doc in keys {
        table.row(vec![
            code(doc.key),
            doc.kind.name().to_owned(),
            cell(doc.on),
            cell(doc.written_by),
            cell(doc.read_by),
            cell(doc.meaning),
        ]);
    }
    out.push_str(&table.render());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::KeyKind;

    #[test]
    fn the_table_of_one_key() {
        let page = page_of(&[KeyDoc {
            key: "example.com/mark",
            kind: KeyKind::LabelOrAnnotation,
            on: "any object",
            written_by: "you",
            read_by: "the controller",
            meaning: "`a|b`: <never>.",
        }]);
        let expected = "\
| Key | Kind | On | Written by | Read by | Meaning |
| --- | --- | --- | --- | --- | --- |
| `example.com/mark` | label or annotation | any object | you | the controller | `a\\|b`: &lt;never&gt;. |
";
        assert!(page.ends_with(expected), "{page}");
    }

    #[test]
    fn every_key_is_on_the_page() {
        let page = page();
        for doc in KEYS {
            assert!(page.contains(&format!("| `{}` |", doc.key)), "{} missing", doc.key);
        }
    }
}
