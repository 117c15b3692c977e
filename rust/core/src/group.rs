//! Grouping rollouts by prompt id.
//!
//! Ids arrive in any order; a group's index is the order of its first
//! appearance, so the result is stable and independent of hashing. The common
//! layout, each prompt's G rollouts side by side, is recognised by comparing
//! each id with its predecessor: only the first id of each run is hashed, and
//! the statistics kernels then work on contiguous slices.

use std::borrow::Cow;
use std::hash::Hash;

use hashbrown::HashMap;
use rayon::prelude::*;

use crate::error::{CoreError, Result};
use crate::parallel;

/// The groups of a batch, as compressed sparse rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Groups {
    len: usize,
    /// Number of rollouts in each group.
    sizes: Vec<u32>,
    /// Group of each rollout; empty when `contiguous` (then it is implied by
    /// `sizes`, and materialised only on request).
    index: Vec<u32>,
    contiguous: bool,
}

impl Groups {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn num_groups(&self) -> usize {
        self.sizes.len()
    }

    /// Number of rollouts in each group.
    pub fn sizes(&self) -> &[u32] {
        &self.sizes
    }

    /// True when every group is one run of consecutive rollouts, so group `g`
    /// is exactly `offsets()[g]..offsets()[g + 1]` of the input.
    pub fn is_contiguous(&self) -> bool {
        self.contiguous
    }

    /// Group of each rollout, `0..num_groups()` in first-appearance order.
    pub fn index(&self) -> Cow<'_, [u32]> {
        if !self.contiguous {
            return Cow::Borrowed(&self.index);
        }
        let mut index = Vec::with_capacity(self.len);
        for (g, &s) in self.sizes.iter().enumerate() {
            index.extend(std::iter::repeat_n(g as u32, s as usize));
        }
        Cow::Owned(index)
    }

    /// `num_groups() + 1` offsets into [`Groups::order`].
    pub fn offsets(&self) -> Vec<u64> {
        let mut offsets = Vec::with_capacity(self.sizes.len() + 1);
        let mut acc = 0u64;
        offsets.push(0);
        for &s in &self.sizes {
            acc += u64::from(s);
            offsets.push(acc);
        }
        offsets
    }

    /// Rollout indices sorted by group, input order kept inside each group
    /// (a stable counting sort).
    pub fn order(&self) -> Vec<u32> {
        if self.contiguous {
            return (0..self.len as u32).collect();
        }
        let mut next: Vec<u64> = self.offsets();
        let mut order = vec![0u32; self.len];
        for (i, &g) in self.index.iter().enumerate() {
            let slot = &mut next[g as usize];
            order[*slot as usize] = i as u32;
            *slot += 1;
        }
        order
    }
}

fn check_len(len: usize) -> Result<()> {
    if len > u32::MAX as usize {
        return Err(CoreError::TooLarge {
            what: "group_ids",
            len,
            max: u32::MAX as usize,
        });
    }
    Ok(())
}

/// Where a new run of equal ids starts, in `lo..hi` (looking back across `lo`).
fn run_starts<K: Eq>(lo: usize, hi: usize, key: &impl Fn(usize) -> K) -> Vec<u32> {
    let mut starts = Vec::new();
    for i in lo..hi {
        if i == 0 || key(i) != key(i - 1) {
            starts.push(i as u32);
        }
    }
    starts
}

/// Group `len` items whose ids are `key(0)..key(len)`.
pub fn group_by<K, F>(len: usize, key: F) -> Result<Groups>
where
    K: Hash + Eq + Ord + Copy + Send + Sync,
    F: Fn(usize) -> K + Sync,
{
    check_len(len)?;
    let starts: Vec<u32> = parallel::install(len, |par| {
        if par {
            let chunk = len.div_ceil(4 * parallel::num_threads()).max(1);
            (0..len.div_ceil(chunk))
                .into_par_iter()
                .map(|c| run_starts(c * chunk, ((c + 1) * chunk).min(len), &key))
                .flatten_iter()
                .collect()
        } else {
            run_starts(0, len, &key)
        }
    });
    let run_len = |r: usize| {
        let end = starts.get(r + 1).map_or(len, |&s| s as usize);
        (end - starts[r] as usize) as u32
    };
    // Ids sorted by run (np.repeat(arange(B), G), sorted uuids) are distinct
    // without hashing.
    let ascending = starts
        .windows(2)
        .all(|w| key(w[0] as usize) < key(w[1] as usize));
    if ascending {
        return Ok(Groups {
            len,
            sizes: (0..starts.len()).map(run_len).collect(),
            index: Vec::new(),
            contiguous: true,
        });
    }
    let mut seen: HashMap<K, u32, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(starts.len(), Default::default());
    let mut sizes: Vec<u32> = Vec::new();
    let mut run_group: Vec<u32> = Vec::with_capacity(starts.len());
    let mut contiguous = true;
    for (r, &start) in starts.iter().enumerate() {
        let next_id = sizes.len() as u32;
        let g = *seen.entry(key(start as usize)).or_insert(next_id);
        if g == next_id {
            sizes.push(run_len(r));
        } else {
            contiguous = false;
            sizes[g as usize] += run_len(r);
        }
        run_group.push(g);
    }
    let mut index = Vec::new();
    if !contiguous {
        index.reserve_exact(len);
        for (r, &g) in run_group.iter().enumerate() {
            index.extend(std::iter::repeat_n(g, run_len(r) as usize));
        }
    }
    Ok(Groups {
        len,
        sizes,
        index,
        contiguous,
    })
}

/// Group integer ids.
pub fn group_ints(ids: &[i64]) -> Result<Groups> {
    check_len(ids.len())?;
    if let Some(g) = equal_ascending_runs(ids) {
        return Ok(Groups {
            len: ids.len(),
            sizes: vec![g as u32; ids.len() / g],
            index: Vec::new(),
            contiguous: true,
        });
    }
    group_by(ids.len(), |i| ids[i])
}

/// `Some(G)` when the ids are runs of exactly `G` equal ids with ascending
/// values (`np.repeat(np.arange(B), G)`, the layout of nearly every batch),
/// checked with branch-free folds over whole runs instead of one comparison
/// and branch per id.
fn equal_ascending_runs(ids: &[i64]) -> Option<usize> {
    let first = *ids.first()?;
    let g = ids.iter().position(|&x| x != first).unwrap_or(ids.len());
    if ids.len() % g != 0 {
        return None;
    }
    // Each run constant, and each run's value above the previous run's
    // (which also makes them distinct); blocks are checked in parallel and
    // then joined at their seams.
    let runs_ok = |chunk: &[i64]| {
        let mut prev = chunk[0];
        let mut ok = true;
        for (j, run) in chunk.chunks_exact(g).enumerate() {
            let v = run[0];
            ok &= j == 0 || v > prev;
            ok &= run.iter().fold(true, |same, &x| same & (x == v));
            prev = v;
        }
        ok
    };
    let block = g * 4096;
    let check = |par: bool| {
        let runs = if par {
            ids.par_chunks(block).all(runs_ok)
        } else {
            runs_ok(ids)
        };
        runs && (block..ids.len())
            .step_by(block)
            .all(|i| ids[i - 1] < ids[i])
    };
    parallel::install(ids.len(), check).then_some(g)
}

/// Group string ids.
pub fn group_strs(ids: &[&str]) -> Result<Groups> {
    group_by(ids.len(), |i| ids[i])
}

/// Group `rows` fixed-width byte rows (numpy `S`/`U` arrays viewed as bytes):
/// row `i` is `data[i * width..(i + 1) * width]`.
pub fn group_rows(data: &[u8], rows: usize, width: usize) -> Result<Groups> {
    if rows.checked_mul(width) != Some(data.len()) {
        return Err(CoreError::InvalidParameter(format!(
            "{} bytes are not {rows} rows of {width} bytes",
            data.len()
        )));
    }
    group_by(rows, |i| &data[i * width..(i + 1) * width])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_appearance_order_and_sizes() {
        let g = group_ints(&[7, 7, 3, 7, 5, 3]).unwrap();
        assert_eq!(g.index().as_ref(), &[0, 0, 1, 0, 2, 1]);
        assert_eq!(g.sizes(), &[3, 2, 1]);
        assert!(!g.is_contiguous());
        assert_eq!(g.offsets(), vec![0, 3, 5, 6]);
        assert_eq!(g.order(), vec![0, 1, 3, 2, 5, 4]);
    }

    #[test]
    fn contiguous_runs_are_recognised() {
        let g = group_strs(&["a", "a", "b", "b", "b", "c"]).unwrap();
        assert!(g.is_contiguous());
        assert_eq!(g.sizes(), &[2, 3, 1]);
        assert_eq!(g.index().as_ref(), &[0, 0, 1, 1, 1, 2]);
        assert_eq!(g.order(), (0..6).collect::<Vec<u32>>());
        let g = group_strs(&["b", "b", "a", "c", "c"]).unwrap();
        assert!(g.is_contiguous());
        assert_eq!(g.index().as_ref(), &[0, 0, 1, 2, 2]);
    }

    #[test]
    fn rows_compare_whole_rows() {
        let data = b"ab\0\0ab\0\0";
        let g = group_rows(data, 4, 2).unwrap();
        assert_eq!(group_rows(b"", 3, 0).unwrap().sizes, vec![3]);
        assert_eq!(g.index, vec![0, 1, 0, 1]);
    }

    #[test]
    fn equal_ascending_runs_fast_path_agrees() {
        for ids in [
            vec![1i64, 1, 2, 2, 5, 5],
            vec![1, 1, 2, 2, 1, 1],
            vec![1, 1, 2, 2, 2],
            vec![3, 3, 3],
            vec![2, 2, 1, 1],
        ] {
            let fast = group_ints(&ids).unwrap();
            let slow = group_by(ids.len(), |i| ids[i]).unwrap();
            assert_eq!(fast.index(), slow.index(), "{ids:?}");
            assert_eq!(fast.sizes(), slow.sizes(), "{ids:?}");
        }
        let big: Vec<i64> = (0..1_000_000).map(|i| i / 16).collect();
        let g = group_ints(&big).unwrap();
        assert!(g.is_contiguous());
        assert_eq!(g.sizes(), vec![16u32; 62_500].as_slice());
    }

    #[test]
    fn empty_input() {
        let g = group_ints(&[]).unwrap();
        assert!(g.is_empty());
        assert_eq!(g.num_groups(), 0);
        assert_eq!(g.offsets(), vec![0]);
    }

    #[test]
    fn parallel_run_detection_matches_sequential() {
        // Long enough for the pool; runs straddle the chunk boundaries.
        let ids: Vec<i64> = (0..200_003).map(|i| (i / 7) % 1000).collect();
        let g = group_ints(&ids).unwrap();
        assert!(!g.is_contiguous());
        let mut first = std::collections::HashMap::new();
        for (i, &id) in ids.iter().enumerate() {
            let n = first.len() as u32;
            let expect = *first.entry(id).or_insert(n);
            assert_eq!(g.index()[i], expect);
        }
    }
}
