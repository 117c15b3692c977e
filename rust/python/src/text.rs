//! Python `str`s read as UTF-8 for the length of one call.
//!
//! The length limit is checked on the `str`'s length before any conversion
//! (a UTF-8 text has at least as many bytes as characters), so a huge
//! completion is refused without being read. An ASCII `str`'s UTF-8 is its
//! own data and is borrowed as it is; any other is encoded into a temporary
//! `bytes` object that this call owns and drops, instead of CPython's UTF-8
//! cache, which would stay attached to the caller's `str` (a second copy of
//! every non-ASCII completion, alive as long as the batch). A `str` that is
//! not valid Unicode (a lone surrogate, which JSON data can hold) is
//! reported as unread, never raised: one bad item must not fail a batch.
//!
//! CPython never moves or frees the buffer of a live `str` or `bytes`, so
//! the borrowed slices stay valid while the GIL is released.

use grpo_fast_core::verify::{Text, Unread};
use pyo3::exceptions::PyUnicodeEncodeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use crate::errors::invalid;

/// A `str` held for one call.
pub enum Held<'py> {
    /// ASCII: borrowed without a copy.
    Ascii(Bound<'py, PyString>),
    /// Encoded for this call only.
    Encoded(Bound<'py, PyBytes>),
    Unread(Unread),
}

impl<'py> Held<'py> {
    /// `s`, or why it is not read: longer than `limit` UTF-8 bytes, or not
    /// valid Unicode. `limit` bounds the conversion work too.
    pub fn new(s: &Bound<'py, PyString>, limit: usize) -> PyResult<Self> {
        let chars = s.len()?;
        if chars > limit {
            return Ok(Held::Unread(Unread::TooLong));
        }
        if s.call_method0(intern!(s.py(), "isascii"))?.is_truthy()? {
            return Ok(Held::Ascii(s.clone()));
        }
        match s.encode_utf8() {
            Ok(b) if b.as_bytes().len() > limit => Ok(Held::Unread(Unread::TooLong)),
            Ok(b) => Ok(Held::Encoded(b)),
            Err(e) if e.is_instance_of::<PyUnicodeEncodeError>(s.py()) => {
                Ok(Held::Unread(Unread::NotUnicode))
            }
            Err(e) => Err(e),
        }
    }

    /// The UTF-8 view (valid while `self` is).
    pub fn text(&self) -> Text<'_> {
        match self {
            // Cannot fail for an ASCII `str`; an error would mean not Unicode.
            Held::Ascii(s) => s.to_str().map_err(|_| Unread::NotUnicode),
            Held::Encoded(b) => std::str::from_utf8(b.as_bytes()).map_err(|_| Unread::NotUnicode),
            Held::Unread(why) => Err(*why),
        }
    }
}

pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}

/// A bad value as an error message shows it: its `repr`, or its type's name
/// when `repr` fails.
pub fn shown(obj: &Bound<'_, PyAny>) -> String {
    obj.repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| type_name(obj))
}

/// One `str` argument, or an `InvalidInputError` naming it.
pub fn one<'py>(what: &str, obj: &Bound<'py, PyAny>, limit: usize) -> PyResult<Held<'py>> {
    let s = obj
        .cast::<PyString>()
        .map_err(|_| invalid(format!("{what} must be a str, not {}", type_name(obj))))?;
    Held::new(s, limit)
}

/// The items of a list of `str`.
pub fn list<'py>(what: &str, obj: &Bound<'py, PyAny>, limit: usize) -> PyResult<Vec<Held<'py>>> {
    let list = obj.cast::<PyList>().map_err(|_| {
        invalid(format!(
            "{what} must be a list of str, not {}",
            type_name(obj)
        ))
    })?;
    list.iter()
        .enumerate()
        .map(|(i, item)| {
            let s = item.cast::<PyString>().map_err(|_| {
                invalid(format!(
                    "{what}[{i}] is {}; expected a str",
                    type_name(&item)
                ))
            })?;
            Held::new(s, limit)
        })
        .collect()
}

/// Golds: one `str` (or None) for every item, or a list of `str | None`.
pub struct Golds<'py> {
    pub one: bool,
    pub held: Vec<Option<Held<'py>>>,
}

impl<'py> Golds<'py> {
    pub fn new(obj: &Bound<'py, PyAny>, limit: usize) -> PyResult<Self> {
        if obj.is_none() {
            return Ok(Golds {
                one: true,
                held: vec![None],
            });
        }
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(Golds {
                one: true,
                held: vec![Some(Held::new(s, limit)?)],
            });
        }
        let list = obj.cast::<PyList>().map_err(|_| {
            invalid(format!(
                "golds must be a str or a list of str (None for no gold), not {}",
                type_name(obj)
            ))
        })?;
        let held = list
            .iter()
            .enumerate()
            .map(|(i, item)| {
                if item.is_none() {
                    return Ok(None);
                }
                let s = item.cast::<PyString>().map_err(|_| {
                    invalid(format!(
                        "golds[{i}] is {}; expected a str or None",
                        type_name(&item)
                    ))
                })?;
                Held::new(s, limit).map(Some)
            })
            .collect::<PyResult<_>>()?;
        Ok(Golds { one: false, held })
    }

    /// The views; `None` for no gold.
    pub fn texts(&self) -> Vec<Option<Text<'_>>> {
        self.held
            .iter()
            .map(|g| g.as_ref().map(Held::text))
            .collect()
    }
}
