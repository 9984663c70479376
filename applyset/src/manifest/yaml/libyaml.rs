//! The libyaml event parser, behind a safe interface: [`Parser`] yields owned [`Event`]s.
//!
//! This is the only module of the manifest loader with unsafe code, and the only one allowed
//! it: `unsafe-libyaml` is a line-by-line translation of libyaml's C, so its parser API takes
//! raw pointers and hands back C strings. Each call here is on a parser this module
//! initialised and owns, and every string is copied out before libyaml frees it.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::mem::MaybeUninit;

use super::{Mark, YamlError};

impl From<unsafe_libyaml::yaml_mark_t> for Mark {
    fn from(m: unsafe_libyaml::yaml_mark_t) -> Self {
        Mark { line: m.line as usize, column: m.column as usize }
    }
}

pub(crate) enum Event {
    StreamStart,
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    Alias { anchor: String },
    Scalar { anchor: Option<String>, tag: String, value: String, implicit: bool },
    SequenceStart { anchor: Option<String> },
    SequenceEnd,
    MappingStart { anchor: Option<String> },
    MappingEnd,
}

/// An owned libyaml parser over a borrowed input. The parser struct points to itself (its read
/// handler data), so it lives in a box and never moves.
pub(crate) struct Parser<'input> {
    raw: Box<MaybeUninit<unsafe_libyaml::yaml_parser_t>>,
    _input: std::marker::PhantomData<&'input [u8]>,
}

impl<'input> Parser<'input> {
    pub(crate) fn new(input: &'input [u8]) -> Self {
        let mut raw = Box::new(MaybeUninit::<unsafe_libyaml::yaml_parser_t>::uninit());
        // SAFETY: `yaml_parser_initialize` fully initialises the struct it is given (it only
        // fails on allocation failure, which aborts in Rust anyway). The input slice outlives
        // the parser ('input), and the boxed parser is never moved, so the pointers libyaml keeps
        // (to the input and to the parser itself) stay valid until `Drop`.
        unsafe {
            let parser = raw.as_mut_ptr();
            assert!(unsafe_libyaml::yaml_parser_initialize(parser).ok, "libyaml: out of memory");
            unsafe_libyaml::yaml_parser_set_encoding(parser, unsafe_libyaml::YAML_UTF8_ENCODING);
            unsafe_libyaml::yaml_parser_set_input_string(parser, input.as_ptr(), input.len() as u64);
        }
        Parser { raw, _input: std::marker::PhantomData }
    }

    pub(crate) fn next(&mut self) -> Result<(Event, Mark), YamlError> {
        let mut event = MaybeUninit::<unsafe_libyaml::yaml_event_t>::uninit();
        // SAFETY: the parser was initialised in `new`. After a successful `yaml_parser_parse`
        // the event is initialised and its union member matches `type_`; strings it points to
        // are NUL-terminated (anchors, tags) or `length` bytes long (scalar values), and are
        // copied before `yaml_event_delete` frees them.
        unsafe {
            let parser = self.raw.as_mut_ptr();
            if (&*parser).error != unsafe_libyaml::YAML_NO_ERROR
                || unsafe_libyaml::yaml_parser_parse(parser, event.as_mut_ptr()).fail
            {
                return Err(parse_error(&*parser));
            }
            let event = event.as_mut_ptr();
            let mark = Mark::from((*event).start_mark);
            let converted = match (*event).type_ {
                unsafe_libyaml::YAML_STREAM_START_EVENT => Event::StreamStart,
                unsafe_libyaml::YAML_STREAM_END_EVENT => Event::StreamEnd,
                unsafe_libyaml::YAML_DOCUMENT_START_EVENT => Event::DocumentStart,
                unsafe_libyaml::YAML_DOCUMENT_END_EVENT => Event::DocumentEnd,
                unsafe_libyaml::YAML_ALIAS_EVENT => {
                    Event::Alias { anchor: c_string((*event).data.alias.anchor).unwrap_or_default() }
                }
                unsafe_libyaml::YAML_SCALAR_EVENT => {
                    let s = (*event).data.scalar;
                    let bytes = std::slice::from_raw_parts(s.value, s.length as usize);
                    Event::Scalar {
                        anchor: c_string(s.anchor),
                        tag: c_string(s.tag).unwrap_or_default(),
                        value: String::from_utf8_lossy(bytes).into_owned(),
                        implicit: s.plain_implicit,
                    }
                }
                unsafe_libyaml::YAML_SEQUENCE_START_EVENT => {
                    Event::SequenceStart { anchor: c_string((*event).data.sequence_start.anchor) }
                }
                unsafe_libyaml::YAML_SEQUENCE_END_EVENT => Event::SequenceEnd,
                unsafe_libyaml::YAML_MAPPING_START_EVENT => {
                    Event::MappingStart { anchor: c_string((*event).data.mapping_start.anchor) }
                }
                unsafe_libyaml::YAML_MAPPING_END_EVENT => Event::MappingEnd,
                _ => {
                    unsafe_libyaml::yaml_event_delete(event);
                    return Err(YamlError::at(mark, "unexpected YAML event"));
                }
            };
            unsafe_libyaml::yaml_event_delete(event);
            Ok((converted, mark))
        }
    }
}

impl Drop for Parser<'_> {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`; deleted exactly once.
        unsafe { unsafe_libyaml::yaml_parser_delete(self.raw.as_mut_ptr()) }
    }
}

/// SAFETY: `ptr` is null or a NUL-terminated string owned by libyaml.
unsafe fn c_string(ptr: *const u8) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: per the function contract.
    let s = unsafe { CStr::from_ptr(ptr.cast()) };
    Some(s.to_string_lossy().into_owned())
}

/// SAFETY: `parser` is an initialised libyaml parser in an error state.
unsafe fn parse_error(parser: &unsafe_libyaml::yaml_parser_t) -> YamlError {
    // SAFETY: `problem` is null or a static NUL-terminated string.
    let problem =
        unsafe { c_string(parser.problem.cast()) }.unwrap_or_else(|| "unknown problem parsing YAML content".to_owned());
    let mark = Mark::from(parser.problem_mark);
    // go-yaml v2 (`parser.fail`) names the problem's 0-based line, plus one for scanner errors
    // only; when that is line 0 it falls back to the context's 0-based line, and names no line
    // when that is 0 too.
    let go_line = if parser.problem_mark.line != 0 {
        let line = parser.problem_mark.line as usize;
        Some(if parser.error == unsafe_libyaml::YAML_SCANNER_ERROR { line + 1 } else { line })
    } else {
        Some(parser.context_mark.line as usize).filter(|&line| line != 0)
    };
    YamlError { go_line, ..YamlError::at(mark, problem) }
}
