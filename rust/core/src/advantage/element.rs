//! The element types a reward array may have (f32, f64), read by the
//! kernels without converting the array.

/// A reward element type the kernel reads without converting the array.
pub trait Reward: Copy + Send + Sync + sealed::Lanes {
    fn to_f64(self) -> f64;
}

impl Reward for f32 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Reward for f64 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
}

mod sealed {
    /// How the AVX2 kernel loads four rewards as f64 lanes.
    pub trait Lanes: Sized {
        /// `x[0..4]`.
        ///
        /// # Safety
        /// The CPU has AVX2 and `x` holds at least four rewards.
        #[cfg(target_arch = "x86_64")]
        unsafe fn load4(x: &[Self]) -> std::arch::x86_64::__m256d;

        /// `x[k], x[k + s], x[k + 2s], x[k + 3s]`.
        ///
        /// # Safety
        /// The CPU has AVX2 and `x` holds at least `k + 3s + 1` rewards
        /// (`3s` fits an i32).
        #[cfg(target_arch = "x86_64")]
        unsafe fn gather4(x: &[Self], k: usize, s: usize) -> std::arch::x86_64::__m256d;
    }

    impl Lanes for f32 {
        #[cfg(target_arch = "x86_64")]
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn load4(x: &[f32]) -> std::arch::x86_64::__m256d {
            use std::arch::x86_64::*;
            debug_assert!(x.len() >= 4);
            // SAFETY: four f32 are read from `x` (the caller's contract).
            unsafe { _mm256_cvtps_pd(_mm_loadu_ps(x.as_ptr())) }
        }

        #[cfg(target_arch = "x86_64")]
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn gather4(x: &[f32], k: usize, s: usize) -> std::arch::x86_64::__m256d {
            use std::arch::x86_64::*;
            debug_assert!(x.len() > k + 3 * s);
            let s = s as i32;
            // SAFETY: the four indices are inside `x` (the caller's contract).
            unsafe {
                let at = _mm_setr_epi32(0, s, 2 * s, 3 * s);
                _mm256_cvtps_pd(_mm_i32gather_ps::<4>(x.as_ptr().add(k), at))
            }
        }
    }

    impl Lanes for f64 {
        #[cfg(target_arch = "x86_64")]
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn load4(x: &[f64]) -> std::arch::x86_64::__m256d {
            use std::arch::x86_64::*;
            debug_assert!(x.len() >= 4);
            // SAFETY: four f64 are read from `x` (the caller's contract).
            unsafe { _mm256_loadu_pd(x.as_ptr()) }
        }

        #[cfg(target_arch = "x86_64")]
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn gather4(x: &[f64], k: usize, s: usize) -> std::arch::x86_64::__m256d {
            use std::arch::x86_64::*;
            debug_assert!(x.len() > k + 3 * s);
            let s = s as i32;
            // SAFETY: the four indices are inside `x` (the caller's contract).
            unsafe {
                let at = _mm_setr_epi32(0, s, 2 * s, 3 * s);
                _mm256_i32gather_pd::<8>(x.as_ptr().add(k), at)
            }
        }
    }
}
