//! The thread pool every parallel kernel runs on.
//!
//! One pool for the process, sized by `GRPO_FAST_NUM_THREADS` (default: the
//! number of cores) or by [`set_num_threads`]. Training scripts fork dataloader
//! workers; a forked child has none of the parent's pool threads, so touching
//! the inherited pool would hang. The pool remembers the pid that built it and
//! a child builds its own on first use (the inherited one is leaked, never
//! touched), which is what tokenizers' at-fork handling achieves without a
//! process-wide hook.

use std::sync::{Arc, Mutex};

use rayon::ThreadPool;

use crate::error::{CoreError, Result};

/// Below this many items a kernel runs on the calling thread: the hand-off to
/// the pool costs more than it saves.
pub const MIN_PARALLEL_LEN: usize = 1 << 15;

struct PoolState {
    pid: u32,
    threads: usize,
    pool: Arc<ThreadPool>,
}

static POOL: Mutex<Option<PoolState>> = Mutex::new(None);
static REQUESTED: Mutex<Option<usize>> = Mutex::new(None);

fn configured_threads() -> usize {
    if let Some(n) = *REQUESTED.lock().unwrap_or_else(|e| e.into_inner()) {
        return n;
    }
    std::env::var("GRPO_FAST_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
}

/// The pool for this process, built on first use (again after a fork).
pub fn pool() -> Arc<ThreadPool> {
    let pid = std::process::id();
    let mut guard = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(state) = guard.as_ref() {
        if state.pid == pid {
            return Arc::clone(&state.pool);
        }
    }
    if let Some(stale) = guard.take() {
        if stale.pid != pid {
            // Inherited across fork(): its threads do not exist here. Dropping
            // it would signal them and wait, so it is leaked on purpose.
            std::mem::forget(stale);
        }
    }
    let threads = configured_threads();
    let pool = Arc::new(build(threads));
    *guard = Some(PoolState {
        pid,
        threads,
        pool: Arc::clone(&pool),
    });
    pool
}

fn build(threads: usize) -> ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("grpo-fast-{i}"))
        .build()
        .unwrap_or_else(|_| {
            // Spawning threads can fail under tight limits; one thread always works.
            rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .use_current_thread()
                .build()
                .expect("a one-thread pool on the current thread cannot fail to build")
        })
}

/// The most threads [`set_num_threads`] accepts: far more than any machine
/// has cores, and few enough that building the pool cannot exhaust the OS.
pub const MAX_THREADS: usize = 1024;

/// Set the number of worker threads; takes effect on the next call.
pub fn set_num_threads(n: usize) -> Result<()> {
    if !(1..=MAX_THREADS).contains(&n) {
        return Err(CoreError::InvalidParameter(format!(
            "num_threads must be an int in [1, {MAX_THREADS}], not {n}"
        )));
    }
    *REQUESTED.lock().unwrap_or_else(|e| e.into_inner()) = Some(n);
    let mut guard = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if guard.as_ref().is_some_and(|s| s.threads != n) {
        if let Some(old) = guard.take() {
            if old.pid != std::process::id() {
                std::mem::forget(old);
            }
        }
    }
    Ok(())
}

/// The number of threads the next parallel call will use.
pub fn num_threads() -> usize {
    let guard = POOL.lock().unwrap_or_else(|e| e.into_inner());
    match guard.as_ref() {
        Some(s) if s.pid == std::process::id() => s.threads,
        _ => {
            drop(guard);
            configured_threads()
        }
    }
}

/// Run `f` inside the pool when `len` items are enough to gain, else inline.
///
/// `f` is told which: it must use rayon's parallel iterators only when given
/// `true`, since outside the pool they would run on rayon's global pool.
pub fn install<R: Send>(len: usize, f: impl FnOnce(bool) -> R + Send) -> R {
    if len < MIN_PARALLEL_LEN || num_threads() == 1 {
        f(false)
    } else {
        pool().install(|| f(true))
    }
}
