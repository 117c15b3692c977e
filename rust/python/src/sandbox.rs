//! The code sandbox (`grpo_fast_core::sandbox`): jobs in, outcomes out.

use grpo_fast_core::sandbox::{self, Ending, Job, Limits};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

fn bytes_of(ob: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    match ob.cast::<PyBytes>() {
        Ok(b) => Ok(b.as_bytes().to_vec()),
        Err(_) => Err(crate::errors::invalid(format!(
            "expected bytes, got {}",
            ob.get_type().name()?
        ))),
    }
}

fn files_of(ob: &Bound<'_, PyAny>) -> PyResult<Vec<(String, Vec<u8>, bool)>> {
    let mut out = Vec::new();
    for item in ob.try_iter()? {
        let (name, data, exec): (String, Bound<'_, PyAny>, bool) = item?.extract()?;
        out.push((name, bytes_of(&data)?, exec));
    }
    Ok(out)
}

/// One program run, read from a `grpo_fast.sandbox.Job` (or any object with these attributes).
#[derive(FromPyObject)]
pub struct PyJob {
    argv: Vec<String>,
    env: Vec<(String, String)>,
    #[pyo3(from_py_with = files_of)]
    files: Vec<(String, Vec<u8>, bool)>,
    #[pyo3(from_py_with = bytes_of)]
    stdin: Vec<u8>,
    allow_writes: bool,
    collect: Vec<String>,
}

/// The bounds of every run, read from a `grpo_fast.sandbox.Limits`.
#[derive(FromPyObject)]
pub struct PyLimits {
    cpu_seconds: f64,
    wall_seconds: f64,
    memory_bytes: u64,
    processes: u64,
    file_size_bytes: u64,
    open_files: u64,
    output_bytes: usize,
}

/// How one run ended, with what it wrote.
#[pyclass(module = "grpo_fast", name = "RunOutcome", frozen, get_all)]
pub struct RunOutcome {
    /// exited, signaled, cpu_time, wall_time, output_limit, forbidden or setup_error.
    ending: &'static str,
    exit_code: Option<i32>,
    signal: Option<i32>,
    stdout: Py<PyBytes>,
    stderr: Py<PyBytes>,
    cpu_seconds: f64,
    wall_seconds: f64,
    max_rss_kib: i64,
    collected: Vec<Option<Py<PyBytes>>>,
    message: String,
}

#[pymethods]
impl RunOutcome {
    fn __repr__(&self) -> String {
        format!(
            "RunOutcome(ending={:?}, exit_code={:?}, signal={:?}, cpu_seconds={:.3})",
            self.ending, self.exit_code, self.signal, self.cpu_seconds
        )
    }
}

/// Run `jobs` in the sandbox on `workers` threads with the GIL released;
/// one `RunOutcome` per job, in order.
#[pyfunction]
#[pyo3(signature = (jobs, limits, workers, force_fallback=false))]
pub fn sandbox_run(
    py: Python<'_>,
    jobs: Vec<PyJob>,
    limits: PyLimits,
    workers: usize,
    force_fallback: bool,
) -> PyResult<Vec<RunOutcome>> {
    let jobs: Vec<Job> = jobs
        .into_iter()
        .map(|j| Job {
            argv: j.argv,
            env: j.env,
            files: j.files,
            stdin: j.stdin,
            allow_writes: j.allow_writes,
            collect: j.collect,
        })
        .collect();
    let limits = Limits {
        cpu_seconds: limits.cpu_seconds,
        wall_seconds: limits.wall_seconds,
        memory_bytes: limits.memory_bytes,
        processes: limits.processes,
        file_size_bytes: limits.file_size_bytes,
        open_files: limits.open_files,
        output_bytes: limits.output_bytes,
    };
    let outs = crate::errors::run(py, || {
        sandbox::run_batch(&jobs, &limits, workers, force_fallback)
    })?;
    Ok(outs
        .into_iter()
        .map(|o| {
            let (ending, exit_code, signal, message) = match o.ending {
                Ending::Exited(c) => ("exited", Some(c), None, String::new()),
                Ending::Signaled(s) => ("signaled", None, Some(s), String::new()),
                Ending::CpuTime => ("cpu_time", None, None, String::new()),
                Ending::WallTime => ("wall_time", None, None, String::new()),
                Ending::OutputLimit => ("output_limit", None, None, String::new()),
                Ending::Forbidden => ("forbidden", None, None, String::new()),
                Ending::SetupError(m) => ("setup_error", None, None, m),
            };
            RunOutcome {
                ending,
                exit_code,
                signal,
                stdout: PyBytes::new(py, &o.stdout).unbind(),
                stderr: PyBytes::new(py, &o.stderr).unbind(),
                cpu_seconds: o.cpu_seconds,
                wall_seconds: o.wall_seconds,
                max_rss_kib: o.max_rss_kib,
                collected: o
                    .collected
                    .iter()
                    .map(|c| c.as_ref().map(|b| PyBytes::new(py, b).unbind()))
                    .collect(),
                message,
            }
        })
        .collect())
}

/// The isolation runs get on this machine: "namespaces" or "fallback"
/// (probed once; `GRPO_FAST_SANDBOX_NO_NAMESPACES=1` forces the fallback).
#[pyfunction]
pub fn sandbox_isolation(py: Python<'_>) -> PyResult<&'static str> {
    Ok(py.detach(sandbox::isolation).name())
}
