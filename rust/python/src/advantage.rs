//! Grouping and advantages.

use grpo_fast_core::advantage::{self, Advantages, Params, Reward};
use grpo_fast_core::group::{self, Groups};
use grpo_fast_core::CoreError;
use numpy::{
    IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::{invalid, run, to_pyerr};

/// Group ids as the Python façade prepares them: an int64 array, a list of
/// str, or a 2-D uint8 array of fixed-width rows (numpy `S`/`U` arrays).
fn groups_of(py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<Groups> {
    if let Ok(arr) = ids.cast::<PyArray1<i64>>() {
        let arr = arr.readonly();
        let slice = arr
            .as_slice()
            .map_err(|_| invalid("group_ids must be contiguous"))?;
        return run(py, || group::group_ints(slice));
    }
    if let Ok(arr) = ids.extract::<PyReadonlyArray2<'_, u8>>() {
        let shape = arr.shape();
        let (rows, width) = (shape[0], shape[1]);
        let slice = arr
            .as_slice()
            .map_err(|_| invalid("group_ids must be contiguous"))?;
        return run(py, || group::group_rows(slice, rows, width));
    }
    if let Ok(list) = ids.cast::<PyList>() {
        // Borrowed UTF-8 views are only valid while the GIL pins the list, so
        // string hashing runs with the GIL held; the numeric work after it
        // does not.
        let mut strs: Vec<&str> = Vec::with_capacity(list.len());
        let items: Vec<Bound<'_, PyAny>> = list.iter().collect();
        for (i, item) in items.iter().enumerate() {
            let s = item.cast::<pyo3::types::PyString>().map_err(|_| {
                invalid(format!(
                    "group_ids[{i}] is {}; expected every id to be a str (or all ints)",
                    item.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ))
            })?;
            strs.push(s.to_str()?);
        }
        return group::group_strs(&strs).map_err(to_pyerr);
    }
    Err(invalid(
        "group_ids must be an int64 array, a list of str, or a 2-D uint8 array",
    ))
}

/// `(index, sizes, offsets, order, contiguous)` of the groups of `ids`.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn group_ids<'py>(
    py: Python<'py>,
    ids: &Bound<'py, PyAny>,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    bool,
)> {
    let groups = groups_of(py, ids)?;
    let (index, sizes, offsets, order) = py.detach(|| {
        let widen = |v: &[u32]| v.iter().map(|&x| i64::from(x)).collect::<Vec<i64>>();
        (
            widen(&groups.index()),
            widen(groups.sizes()),
            groups
                .offsets()
                .iter()
                .map(|&x| x as i64)
                .collect::<Vec<i64>>(),
            widen(&groups.order()),
        )
    });
    Ok((
        index.into_pyarray(py),
        sizes.into_pyarray(py),
        offsets.into_pyarray(py),
        order.into_pyarray(py),
        groups.is_contiguous(),
    ))
}

fn compute<R: Reward + numpy::Element>(
    py: Python<'_>,
    rewards: PyReadonlyArray1<'_, R>,
    groups: &Groups,
    params: &Params,
) -> PyResult<Advantages> {
    let slice = rewards
        .as_slice()
        .map_err(|_| invalid("rewards must be contiguous"))?;
    run(py, || advantage::compute(slice, groups, params))
}

/// Advantages and group statistics; the façade `grpo_fast.compute_advantages`
/// documents the arguments.
#[pyfunction]
#[pyo3(signature = (rewards, group_ids, estimator, scale, eps, unbiased, success_threshold))]
#[allow(clippy::too_many_arguments)]
pub fn compute_advantages<'py>(
    py: Python<'py>,
    rewards: &Bound<'py, PyAny>,
    group_ids: &Bound<'py, PyAny>,
    estimator: &str,
    scale: &str,
    eps: f64,
    unbiased: bool,
    success_threshold: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let params = Params {
        estimator: estimator.parse().map_err(to_pyerr)?,
        scale: scale.parse().map_err(to_pyerr)?,
        eps,
        unbiased,
        success_threshold,
    };
    let groups = groups_of(py, group_ids)?;
    let out = if let Ok(r) = rewards.extract::<PyReadonlyArray1<'py, f32>>() {
        compute(py, r, &groups, &params)?
    } else if let Ok(r) = rewards.extract::<PyReadonlyArray1<'py, f64>>() {
        compute(py, r, &groups, &params)?
    } else {
        return Err(to_pyerr(CoreError::InvalidParameter(
            "rewards must be a 1-D float32 or float64 array".into(),
        )));
    };
    let stats = out.stats;
    let dict = PyDict::new(py);
    dict.set_item("advantages", out.advantages.into_pyarray(py))?;
    dict.set_item("keep", out.keep.into_pyarray(py))?;
    dict.set_item("mean", stats.mean.into_pyarray(py))?;
    dict.set_item("std", stats.std.into_pyarray(py))?;
    let widen = |v: Vec<u32>| v.into_iter().map(i64::from).collect::<Vec<i64>>();
    dict.set_item("size", widen(stats.size).into_pyarray(py))?;
    dict.set_item("num_valid", widen(stats.num_valid).into_pyarray(py))?;
    dict.set_item("solve_rate", stats.solve_rate.into_pyarray(py))?;
    dict.set_item("frac_zero_std", out.frac_zero_std)?;
    // Contiguous groups have no index array; the façade derives it from
    // `size` on first use rather than paying for it on every call.
    if groups.is_contiguous() {
        dict.set_item("group_index", py.None())?;
    } else {
        dict.set_item("group_index", groups.index().into_owned().into_pyarray(py))?;
    }
    Ok(dict)
}
