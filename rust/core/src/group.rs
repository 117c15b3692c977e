//! Grouping rollouts by prompt id.
//!
//! Ids arrive in any order; a group's index is the order of its first
//! appearance, so the result is stable and independent of hashing. The common
//! layout, each prompt's G rollouts side by side, is recognised by comparing
//! each id with its predecessor: only the first id of each run is hashed, and
//! the statistics kernels then work on contiguous slices.

use std::hash::Hash;

use hashbrown::HashMap;

use crate::error::{CoreError, Result};

/// The groups of a batch, as compressed sparse rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Groups {
    /// Group of each rollout, `0..num_groups()` in first-appearance order.
    pub index: Vec<u32>,
    /// Number of rollouts in each group.
    pub sizes: Vec<u32>,
    /// True when every group is one run of consecutive rollouts, so group `g`
    /// is exactly `offsets()[g]..offsets()[g + 1]` of the input.
    pub contiguous: bool,
}

impl Groups {
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn num_groups(&self) -> usize {
        self.sizes.len()
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
            return (0..self.index.len() as u32).collect();
        }
        let mut next: Vec<u64> = self.offsets();
        let mut order = vec![0u32; self.index.len()];
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

/// Group `len` items whose ids are `key(0)..key(len)`.
pub fn group_by<K: Hash + Eq + Copy>(len: usize, key: impl Fn(usize) -> K) -> Result<Groups> {
    check_len(len)?;
    let mut index = Vec::with_capacity(len);
    let mut sizes: Vec<u32> = Vec::new();
    let mut seen: HashMap<K, u32, foldhash::fast::RandomState> = HashMap::default();
    let mut contiguous = true;
    let mut i = 0;
    while i < len {
        let k = key(i);
        let start = i;
        i += 1;
        while i < len && key(i) == k {
            i += 1;
        }
        let run = (i - start) as u32;
        let next_id = sizes.len() as u32;
        let g = *seen.entry(k).or_insert(next_id);
        if g == next_id {
            sizes.push(run);
        } else {
            contiguous = false;
            sizes[g as usize] += run;
        }
        index.extend(std::iter::repeat_n(g, run as usize));
    }
    Ok(Groups {
        index,
        sizes,
        contiguous,
    })
}

/// Group integer ids.
pub fn group_ints(ids: &[i64]) -> Result<Groups> {
    group_by(ids.len(), |i| ids[i])
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
        assert_eq!(g.index, vec![0, 0, 1, 0, 2, 1]);
        assert_eq!(g.sizes, vec![3, 2, 1]);
        assert!(!g.contiguous);
        assert_eq!(g.offsets(), vec![0, 3, 5, 6]);
        assert_eq!(g.order(), vec![0, 1, 3, 2, 5, 4]);
    }

    #[test]
    fn contiguous_runs_are_recognised() {
        let g = group_strs(&["a", "a", "b", "b", "b", "c"]).unwrap();
        assert!(g.contiguous);
        assert_eq!(g.sizes, vec![2, 3, 1]);
        assert_eq!(g.order(), (0..6).collect::<Vec<u32>>());
    }

    #[test]
    fn rows_compare_whole_rows() {
        let data = b"ab\0\0ab\0\0";
        let g = group_rows(data, 4, 2).unwrap();
        assert_eq!(group_rows(b"", 3, 0).unwrap().sizes, vec![3]);
        assert_eq!(g.index, vec![0, 1, 0, 1]);
    }

    #[test]
    fn empty_input() {
        let g = group_ints(&[]).unwrap();
        assert!(g.is_empty());
        assert_eq!(g.num_groups(), 0);
        assert_eq!(g.offsets(), vec![0]);
    }
}
