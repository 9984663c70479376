//! kubectl's output printers for applied objects (`-o json|yaml|name|jsonpath|go-template`).

pub mod jsonpath;
