//! The one error type of the core. The binding maps each variant to a Python
//! exception; variants that blame the caller's input become `ValueError`s.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum CoreError {
    /// Two inputs that must line up do not (`rewards` vs `group_ids`, ...).
    #[error("{left} has {left_len} entries but {right} has {right_len}")]
    LengthMismatch {
        left: &'static str,
        left_len: usize,
        right: &'static str,
        right_len: usize,
    },
    /// A value that must be finite (or NaN, where NaN means "not scorable") is not.
    #[error("{what}[{index}] is {value}; expected a finite number (NaN marks an unscorable item)")]
    NonFinite {
        what: &'static str,
        index: usize,
        value: f64,
    },
    /// A name that selects behaviour (an estimator, a scale mode) is unknown.
    #[error("unknown {what} '{got}'; expected one of {}", .expected.join(", "))]
    UnknownName {
        what: &'static str,
        got: String,
        expected: &'static [&'static str],
    },
    /// A numeric parameter outside its domain.
    #[error("{0}")]
    InvalidParameter(String),
    /// A result beyond the range of its type (rewards too large for it).
    #[error("{0}")]
    Overflow(String),
    /// A size the core cannot index (more than u32::MAX rollouts or groups).
    #[error("{what} has {len} entries; at most {max} are supported")]
    TooLarge {
        what: &'static str,
        len: usize,
        max: usize,
    },
}

pub type Result<T> = std::result::Result<T, CoreError>;
