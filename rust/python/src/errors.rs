//! Core errors and panics as Python exceptions, and the one helper every
//! binding uses to call into the core.

use std::panic::{catch_unwind, AssertUnwindSafe};

use grpo_fast_core::CoreError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// An exception class of `grpo_fast.errors`, which defines the hierarchy in
/// Python so that users can import and subclass it.
fn error_type<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let module = py.import("grpo_fast.errors")?;
    Ok(module.getattr(name)?.cast_into::<PyType>()?)
}

fn raise(name: &str, msg: String) -> PyErr {
    Python::attach(|py| match error_type(py, name) {
        Ok(ty) => PyErr::from_type(ty, msg),
        Err(_) => PyRuntimeError::new_err(msg),
    })
}

/// Every core error blames the caller's input: `InvalidInputError` (a `ValueError`).
pub fn to_pyerr(err: CoreError) -> PyErr {
    raise("InvalidInputError", err.to_string())
}

/// An input error raised by the binding itself (wrong type, dimension, dtype).
pub fn invalid(msg: impl Into<String>) -> PyErr {
    raise("InvalidInputError", msg.into())
}

/// Run `f` with the GIL released; map core errors to Python exceptions and
/// catch panics so that a bug surfaces as `grpo_fast.errors.InternalError`
/// instead of aborting the interpreter.
pub fn run<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, CoreError> + Send,
) -> PyResult<T> {
    finish(py.detach(|| catch_unwind(AssertUnwindSafe(f))))
}

/// [`run`] for work on `len` items (or bytes of text): below a few thousand,
/// releasing and re-taking the GIL costs more than the work, so small calls
/// keep it.
pub fn run_sized<T: Send>(
    py: Python<'_>,
    len: usize,
    f: impl FnOnce() -> Result<T, CoreError> + Send,
) -> PyResult<T> {
    const KEEP_GIL_BELOW: usize = 4096;
    if len < KEEP_GIL_BELOW {
        finish(catch_unwind(AssertUnwindSafe(f)))
    } else {
        run(py, f)
    }
}

fn finish<T>(out: std::thread::Result<Result<T, CoreError>>) -> PyResult<T> {
    match out {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(to_pyerr(err)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            Err(raise(
                "InternalError",
                format!("grpo-fast core panicked (please report this): {what}"),
            ))
        }
    }
}
