//! Grouping and advantages.

use std::mem::MaybeUninit;

use grpo_fast_core::advantage::{self, GroupStats, Params, Reward};
use grpo_fast_core::baseline::{self, Inputs};
use grpo_fast_core::group::{self, Groups};
use grpo_fast_core::CoreError;
use numpy::{
    IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::errors::{invalid, run_sized, to_pyerr};
use crate::options::name_arg;
use crate::text::type_name;

/// Group ids as the Python façade prepares them: an int64 array, a list of
/// str, or a 2-D uint8 array of fixed-width rows (numpy `S`/`U` arrays).
pub fn groups_of(py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<Groups> {
    if let Ok(arr) = ids.cast::<PyArray1<i64>>() {
        let arr = arr.readonly();
        let slice = arr
            .as_slice()
            .map_err(|_| invalid("group_ids must be contiguous"))?;
        return run_sized(py, slice.len(), || group::group_ints(slice));
    }
    if let Ok(arr) = ids.extract::<PyReadonlyArray2<'_, u8>>() {
        let shape = arr.shape();
        let (rows, width) = (shape[0], shape[1]);
        let slice = arr
            .as_slice()
            .map_err(|_| invalid("group_ids must be contiguous"))?;
        return run_sized(py, slice.len(), || group::group_rows(slice, rows, width));
    }
    if let Ok(list) = ids.cast::<PyList>() {
        // Borrowed UTF-8 views are only valid while the GIL pins the list, so
        // string hashing runs with the GIL held; the numeric work after it
        // does not.
        // Ids are short and almost always ASCII, whose UTF-8 is borrowed
        // without a copy; a lone surrogate cannot be hashed as UTF-8 and
        // is named (a lossy id could merge two groups).
        let items: Vec<Bound<'_, PyAny>> = list.iter().collect();
        let strs = items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let s = item.cast::<PyString>().map_err(|_| {
                    invalid(format!(
                        "group_ids[{i}] is {}; expected every id to be a str (or all ints)",
                        type_name(item)
                    ))
                })?;
                s.to_str().map_err(|_| {
                    invalid(format!(
                        "group_ids[{i}] is not valid Unicode (it holds a lone surrogate); \
                         an id must be a str that can be encoded as UTF-8"
                    ))
                })
            })
            .collect::<PyResult<Vec<&str>>>()?;
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

/// Runs the core into fresh numpy arrays, which it fills without their being
/// zeroed first (zeroing would cost as much again as writing them); numpy
/// backs large arrays with huge pages, and the arrays are handed over
/// without a copy. With `inputs`, the estimators of `baseline` (ReMax's
/// baselines, OPO's lengths, GPG) compute into vectors instead.
#[allow(clippy::type_complexity)]
fn compute<'py, R: Reward + numpy::Element>(
    py: Python<'py>,
    rewards: PyReadonlyArray1<'py, R>,
    groups: &Groups,
    params: &Params,
    inputs: Option<Inputs<'_>>,
) -> PyResult<(
    Bound<'py, PyArray1<f32>>,
    Bound<'py, PyArray1<bool>>,
    GroupStats,
    f64,
)> {
    let slice = rewards
        .as_slice()
        .map_err(|_| invalid("rewards must be contiguous"))?;
    let n = slice.len();
    if let Some(inputs) = inputs {
        let out = run_sized(py, n, || baseline::compute(slice, groups, params, inputs))?;
        return Ok((
            out.advantages.into_pyarray(py),
            out.keep.into_pyarray(py),
            out.stats,
            out.frac_zero_std,
        ));
    }
    // SAFETY: the arrays are read by no one until `compute_into` has written
    // every element (its contract); on an error they are dropped unread.
    let (adv, keep) = unsafe {
        (
            PyArray1::<f32>::new(py, n, false),
            PyArray1::<bool>::new(py, n, false),
        )
    };
    let (stats, frac) = {
        let (a, k) = if n == 0 {
            (&mut [][..], &mut [][..])
        } else {
            // SAFETY: fresh C-contiguous arrays of `n` aligned elements that
            // nothing else references; `MaybeUninit` because they are unwritten.
            unsafe {
                (
                    std::slice::from_raw_parts_mut(adv.data().cast::<MaybeUninit<f32>>(), n),
                    std::slice::from_raw_parts_mut(keep.data().cast::<MaybeUninit<bool>>(), n),
                )
            }
        };
        run_sized(py, n, || {
            advantage::compute_into(slice, groups, params, a, k)
        })?
    };
    Ok((adv, keep, stats, frac))
}

fn contiguous<'a>(a: &'a PyReadonlyArray1<'_, f64>) -> PyResult<&'a [f64]> {
    a.as_slice()
        .map_err(|_| invalid("baselines and lengths must be contiguous"))
}

/// A per-rollout or per-group array, converted to numpy on first access:
/// a caller that reads only `advantages` pays for one array, not eight.
struct Lazy<T> {
    raw: Vec<T>,
    array: Option<Py<PyAny>>,
}

impl<T> Lazy<T> {
    fn new(raw: Vec<T>) -> Self {
        Self { raw, array: None }
    }

    fn ready(array: Bound<'_, PyAny>) -> Self {
        Self {
            raw: Vec::new(),
            array: Some(array.unbind()),
        }
    }

    fn get<'py, U: numpy::Element>(
        &mut self,
        py: Python<'py>,
        convert: impl FnOnce(Vec<T>) -> Vec<U>,
    ) -> Bound<'py, PyAny> {
        match &self.array {
            Some(array) => array.bind(py).clone(),
            None => {
                let array = convert(std::mem::take(&mut self.raw))
                    .into_pyarray(py)
                    .into_any();
                self.array = Some(array.clone().unbind());
                array
            }
        }
    }
}

fn same<T>(v: Vec<T>) -> Vec<T> {
    v
}

fn widen(v: Vec<u32>) -> Vec<i64> {
    v.into_iter().map(i64::from).collect()
}

/// The group of each rollout: kept as the grouping until first asked for.
enum GroupIndex {
    Groups(Groups),
    Array(Py<PyAny>),
}

/// Per-rollout advantages and per-group statistics of
/// `grpo_fast.compute_advantages`. Arrays are numpy, built on first access.
/// It pickles and deep-copies (as its arrays), so it can be sent to worker
/// processes.
///
/// Attributes
/// ----------
/// advantages : float32 array [N]
/// keep : bool array [N]
///     DAPO dynamic sampling: False for unscorable rollouts and for every
///     rollout of a group whose scorable rewards are all equal (no signal).
/// group_index : int64 array [N]
///     Group of each rollout (first-appearance order); indexes the arrays below.
/// mean, std : float64 arrays [num_groups]
///     Of the scorable rewards; mean is NaN for a group with none, std is 0
///     with fewer than two.
/// size, num_valid : int64 arrays [num_groups]
///     Rollouts per group, and how many of them are scorable (not NaN).
/// solve_rate : float64 array [num_groups]
///     Fraction of scorable rollouts with reward >= ``success_threshold``.
/// frac_zero_std : float
///     Fraction of groups that carry no signal.
/// num_groups : int
#[pyclass(module = "grpo_fast", name = "AdvantageResult")]
pub struct AdvantageResult {
    advantages: Py<PyAny>,
    keep: Py<PyAny>,
    mean: Lazy<f64>,
    std: Lazy<f64>,
    size: Lazy<u32>,
    num_valid: Lazy<u32>,
    solve_rate: Lazy<f64>,
    group_index: GroupIndex,
    len: usize,
    #[pyo3(get)]
    frac_zero_std: f64,
    #[pyo3(get)]
    num_groups: usize,
}

#[pymethods]
impl AdvantageResult {
    /// Rebuild a result from its arrays (what pickling stores); the lengths
    /// must agree as `compute_advantages` makes them.
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new<'py>(
        advantages: Bound<'py, PyArray1<f32>>,
        keep: Bound<'py, PyArray1<bool>>,
        group_index: Bound<'py, PyArray1<i64>>,
        mean: Bound<'py, PyArray1<f64>>,
        std: Bound<'py, PyArray1<f64>>,
        size: Bound<'py, PyArray1<i64>>,
        num_valid: Bound<'py, PyArray1<i64>>,
        solve_rate: Bound<'py, PyArray1<f64>>,
        frac_zero_std: f64,
    ) -> PyResult<Self> {
        let n = advantages.len();
        let g = mean.len();
        let rows = [("keep", keep.len()), ("group_index", group_index.len())];
        let groups = [
            ("std", std.len()),
            ("size", size.len()),
            ("num_valid", num_valid.len()),
            ("solve_rate", solve_rate.len()),
        ];
        for (name, len) in rows {
            if len != n {
                return Err(invalid(format!(
                    "{name} has {len} entries but advantages has {n}"
                )));
            }
        }
        for (name, len) in groups {
            if len != g {
                return Err(invalid(format!(
                    "{name} has {len} entries but mean has {g}"
                )));
            }
        }
        Ok(Self {
            advantages: advantages.into_any().unbind(),
            keep: keep.into_any().unbind(),
            mean: Lazy::ready(mean.into_any()),
            std: Lazy::ready(std.into_any()),
            size: Lazy::ready(size.into_any()),
            num_valid: Lazy::ready(num_valid.into_any()),
            solve_rate: Lazy::ready(solve_rate.into_any()),
            group_index: GroupIndex::Array(group_index.into_any().unbind()),
            len: n,
            frac_zero_std,
            num_groups: g,
        })
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let this = slf.as_any();
        let args: Vec<Bound<'py, PyAny>> = [
            "advantages",
            "keep",
            "group_index",
            "mean",
            "std",
            "size",
            "num_valid",
            "solve_rate",
            "frac_zero_std",
        ]
        .iter()
        .map(|name| this.getattr(*name))
        .collect::<PyResult<_>>()?;
        Ok((py.get_type::<Self>().into_any(), PyTuple::new(py, args)?))
    }

    #[getter]
    fn advantages<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.advantages.bind(py).clone()
    }

    #[getter]
    fn keep<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.keep.bind(py).clone()
    }

    #[getter]
    fn mean<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.mean.get(py, same)
    }

    #[getter]
    fn std<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.std.get(py, same)
    }

    #[getter]
    fn size<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.size.get(py, widen)
    }

    #[getter]
    fn num_valid<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.num_valid.get(py, widen)
    }

    #[getter]
    fn solve_rate<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.solve_rate.get(py, same)
    }

    #[getter]
    fn group_index<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyAny> {
        let index = match &self.group_index {
            GroupIndex::Array(index) => return index.bind(py).clone(),
            GroupIndex::Groups(groups) => widen(groups.index().into_owned())
                .into_pyarray(py)
                .into_any(),
        };
        self.group_index = GroupIndex::Array(index.clone().unbind());
        index
    }

    fn __len__(&self) -> usize {
        self.len
    }

    fn __repr__(&self) -> String {
        format!(
            "AdvantageResult(n={}, num_groups={}, frac_zero_std={:.4})",
            self.len, self.num_groups, self.frac_zero_std
        )
    }
}

/// Advantages and group statistics; the façade `grpo_fast.compute_advantages`
/// documents the arguments.
#[pyfunction]
#[pyo3(signature = (
    rewards, group_ids, estimator, scale, eps, unbiased, success_threshold,
    baselines=None, lengths=None,
))]
#[allow(clippy::too_many_arguments)]
pub fn compute_advantages<'py>(
    py: Python<'py>,
    rewards: &Bound<'py, PyAny>,
    group_ids: &Bound<'py, PyAny>,
    estimator: &Bound<'py, PyAny>,
    scale: &Bound<'py, PyAny>,
    eps: f64,
    unbiased: bool,
    success_threshold: f64,
    baselines: Option<PyReadonlyArray1<'py, f64>>,
    lengths: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<AdvantageResult> {
    let params = Params {
        estimator: name_arg("estimator", estimator)?,
        scale: name_arg("scale", scale)?,
        eps,
        unbiased,
        success_threshold,
    };
    let groups = groups_of(py, group_ids)?;
    let inputs = if params.estimator.is_baselined() || baselines.is_some() || lengths.is_some() {
        Some(Inputs {
            baselines: baselines.as_ref().map(contiguous).transpose()?,
            lengths: lengths.as_ref().map(contiguous).transpose()?,
        })
    } else {
        None
    };
    let (adv, keep, stats, frac_zero_std) =
        if let Ok(r) = rewards.extract::<PyReadonlyArray1<'py, f32>>() {
            compute(py, r, &groups, &params, inputs)?
        } else if let Ok(r) = rewards.extract::<PyReadonlyArray1<'py, f64>>() {
            compute(py, r, &groups, &params, inputs)?
        } else {
            return Err(to_pyerr(CoreError::InvalidParameter(
                "rewards must be a 1-D float32 or float64 array".into(),
            )));
        };
    Ok(AdvantageResult {
        num_groups: groups.num_groups(),
        len: groups.len(),
        advantages: adv.into_any().unbind(),
        keep: keep.into_any().unbind(),
        mean: Lazy::new(stats.mean),
        std: Lazy::new(stats.std),
        size: Lazy::new(stats.size),
        num_valid: Lazy::new(stats.num_valid),
        solve_rate: Lazy::new(stats.solve_rate),
        group_index: GroupIndex::Groups(groups),
        frac_zero_std,
    })
}
