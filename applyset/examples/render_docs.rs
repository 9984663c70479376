//! Writes the generated reference pages of the book (`applyset::reference`) into a directory,
//! for `scripts/render-docs`:
//!
//! ```text
//! cargo run -p applyset --example render_docs -- docs/src/reference
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut arguments = std::env::args_os().skip(1);
    let (Some(directory), None) = (arguments.next(), arguments.next()) else {
        eprintln!("usage: render_docs DIRECTORY");
        return ExitCode::from(2);
    };
    let directory = PathBuf::from(directory);
    if let Err(error) = std::fs::create_dir_all(&directory) {
        eprintln!("error: creating {}: {error}", directory.display());
        return ExitCode::FAILURE;
    }
    for page in applyset::reference::pages() {
        let path = directory.join(page.file_name);
        if let Err(error) = std::fs::write(&path, page.text) {
            eprintln!("error: writing {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
