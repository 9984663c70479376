//! The libyaml event emitter, behind a safe interface: [`Emitter`] takes owned events and
//! returns the text. go-yaml v2's encoder drives the same emitter (it is a Go port of libyaml),
//! so the layout decisions (indentation, line folding at 80 columns, when a plain scalar must
//! be quoted) are libyaml's own rather than a re-implementation.
//!
//! Like `libyaml`, this module is fenced: it is allowed unsafe code because `unsafe-libyaml`'s
//! API takes raw pointers. Each call is on an emitter this module initialised and owns.
#![allow(unsafe_code)]

use std::mem::MaybeUninit;

/// How a scalar is written (libyaml decides again: a plain scalar it cannot write plainly
/// becomes single-quoted, a literal it cannot write as a block becomes double-quoted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScalarStyle {
    Plain,
    DoubleQuoted,
    Literal,
}

/// An owned libyaml emitter writing one implicit document into memory. The output buffer is
/// boxed so the pointer libyaml keeps to it stays valid.
pub(crate) struct Emitter {
    raw: Box<MaybeUninit<unsafe_libyaml::yaml_emitter_t>>,
    // Boxed on purpose: libyaml keeps a pointer to the vector itself (not its buffer), which
    // must stay put when the `Emitter` moves.
    #[allow(clippy::box_collection)]
    out: Box<Vec<u8>>,
    failed: bool,
}

/// libyaml's write handler: appends to the `Vec<u8>` behind `data`.
///
/// SAFETY: `data` is the boxed `Vec<u8>` of the [`Emitter`] that registered this handler, and
/// `buffer` holds `size` initialised bytes (libyaml's own output buffer).
unsafe fn write_to_vec(data: *mut std::ffi::c_void, buffer: *mut u8, size: u64) -> i32 {
    // SAFETY: per the function contract.
    unsafe {
        let out = &mut *data.cast::<Vec<u8>>();
        out.extend_from_slice(std::slice::from_raw_parts(buffer, size as usize));
    }
    1
}

impl Emitter {
    /// An emitter with go-yaml v2's settings (unicode output, libyaml's default 80-column
    /// width), positioned inside an implicit document.
    pub(crate) fn new() -> Emitter {
        let mut raw = Box::new(MaybeUninit::<unsafe_libyaml::yaml_emitter_t>::uninit());
        let mut out = Box::new(Vec::new());
        // SAFETY: `yaml_emitter_initialize` fully initialises the struct (it only fails on
        // allocation failure). The emitter and the output vector are boxed and never moved, so
        // the pointers libyaml keeps stay valid until `Drop`.
        unsafe {
            let emitter = raw.as_mut_ptr();
            assert!(unsafe_libyaml::yaml_emitter_initialize(emitter).ok, "libyaml: out of memory");
            let data: *mut Vec<u8> = &mut *out;
            unsafe_libyaml::yaml_emitter_set_output(emitter, write_to_vec, data.cast());
            unsafe_libyaml::yaml_emitter_set_unicode(emitter, true);
        }
        let mut emitter = Emitter { raw, out, failed: false };
        emitter.emit(|event| {
            // SAFETY: `event` is writable event storage.
            unsafe { unsafe_libyaml::yaml_stream_start_event_initialize(event, unsafe_libyaml::YAML_UTF8_ENCODING).ok }
        });
        emitter.emit(|event| {
            // SAFETY: `event` is writable; no version or tag directives.
            unsafe {
                unsafe_libyaml::yaml_document_start_event_initialize(
                    event,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    true,
                )
                .ok
            }
        });
        emitter
    }

    /// Initialises an event with `init` and hands it to the emitter (which takes ownership).
    fn emit(&mut self, init: impl FnOnce(*mut unsafe_libyaml::yaml_event_t) -> bool) {
        if self.failed {
            return;
        }
        let mut event = MaybeUninit::<unsafe_libyaml::yaml_event_t>::uninit();
        if !init(event.as_mut_ptr()) {
            self.failed = true;
            return;
        }
        // SAFETY: the emitter was initialised in `new`; the event was initialised just above
        // and is consumed by `yaml_emitter_emit` whether it succeeds or fails.
        self.failed = unsafe { unsafe_libyaml::yaml_emitter_emit(self.raw.as_mut_ptr(), event.as_mut_ptr()).fail };
    }

    pub(crate) fn mapping_start(&mut self) {
        self.emit(|event| {
            // SAFETY: `event` is writable; no anchor, no tag (implicit), block style.
            unsafe {
                unsafe_libyaml::yaml_mapping_start_event_initialize(
                    event,
                    std::ptr::null(),
                    std::ptr::null(),
                    true,
                    unsafe_libyaml::YAML_BLOCK_MAPPING_STYLE,
                )
                .ok
            }
        });
    }

    pub(crate) fn mapping_end(&mut self) {
        // SAFETY: `event` is writable.
        self.emit(|event| unsafe { unsafe_libyaml::yaml_mapping_end_event_initialize(event).ok });
    }

    pub(crate) fn sequence_start(&mut self) {
        self.emit(|event| {
            // SAFETY: `event` is writable; no anchor, no tag (implicit), block style.
            unsafe {
                unsafe_libyaml::yaml_sequence_start_event_initialize(
                    event,
                    std::ptr::null(),
                    std::ptr::null(),
                    true,
                    unsafe_libyaml::YAML_BLOCK_SEQUENCE_STYLE,
                )
                .ok
            }
        });
    }

    pub(crate) fn sequence_end(&mut self) {
        // SAFETY: `event` is writable.
        self.emit(|event| unsafe { unsafe_libyaml::yaml_sequence_end_event_initialize(event).ok });
    }

    /// An untagged scalar (implicit both plain and quoted, as go-yaml emits them).
    pub(crate) fn scalar(&mut self, value: &str, style: ScalarStyle) {
        let Ok(length) = i32::try_from(value.len()) else {
            self.failed = true;
            return;
        };
        let style = match style {
            ScalarStyle::Plain => unsafe_libyaml::YAML_PLAIN_SCALAR_STYLE,
            ScalarStyle::DoubleQuoted => unsafe_libyaml::YAML_DOUBLE_QUOTED_SCALAR_STYLE,
            ScalarStyle::Literal => unsafe_libyaml::YAML_LITERAL_SCALAR_STYLE,
        };
        self.emit(|event| {
            // SAFETY: `event` is writable; `value` is valid UTF-8 of `length` bytes, which
            // libyaml copies before this call returns.
            unsafe {
                unsafe_libyaml::yaml_scalar_event_initialize(
                    event,
                    std::ptr::null(),
                    std::ptr::null(),
                    value.as_ptr(),
                    length,
                    true,
                    true,
                    style,
                )
                .ok
            }
        });
    }

    /// Ends the document and returns the text, or `None` when libyaml refused an event. The
    /// stream is not ended: libyaml 0.2.5 would then close a document ending in a kept-newline
    /// literal with `...`, which go-yaml v2 (ported from an older libyaml) never writes.
    pub(crate) fn finish(mut self) -> Option<String> {
        // SAFETY: `event` is writable; an implicit document end.
        self.emit(|event| unsafe { unsafe_libyaml::yaml_document_end_event_initialize(event, true).ok });
        if self.failed {
            return None;
        }
        String::from_utf8(std::mem::take(&mut *self.out)).ok()
    }
}

impl Drop for Emitter {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`; deleted exactly once.
        unsafe { unsafe_libyaml::yaml_emitter_delete(self.raw.as_mut_ptr()) }
    }
}
