//! The dense score array a query accumulates into, reused across queries on each thread.
//!
//! Allocating it per query costs more than the query at large N: 400 KB at N = 100,000 is
//! above the allocator's mmap threshold, so every query would fault in fresh zeroed pages. The
//! buffer is *taken out* of the thread-local while in use, so a re-entrant query (a `keep`
//! filter that itself searches) gets its own buffer instead of a `RefCell` panic, and a panic
//! mid-query drops the buffer instead of leaving dirty scores behind.

use std::cell::Cell;

thread_local! {
    static SCORES: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
}

/// Runs `f` on an all-zero buffer of `len` scores. `f` must leave every score at zero again
/// (the top-k scan does, as it reads them), since the buffer is kept for the next query.
pub(crate) fn with_scores<R>(len: usize, f: impl FnOnce(&mut [f32]) -> R) -> R {
    let mut buf = SCORES.try_with(Cell::take).unwrap_or_default();
    if buf.len() < len {
        buf.resize(len, 0.0);
    }
    let result = f(buf.get_mut(..len).unwrap_or_default());
    // Ignored failure: the thread is exiting, the buffer is simply freed.
    let _ = SCORES.try_with(|cell| cell.set(buf));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_zeroed_and_nest() {
        with_scores(4, |outer| {
            assert_eq!(outer, [0.0; 4]);
            outer[1] = 3.0;
            with_scores(8, |inner| assert_eq!(inner, [0.0; 8]));
            outer[1] = 0.0;
        });
        with_scores(2, |again| assert_eq!(again, [0.0; 2]));
    }
}
