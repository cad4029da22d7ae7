//! Buffers kept on each thread between uses: taken out of a thread-local while in use, put back
//! after, and dropped instead when a huge use grew them past [`KEEP_UP_TO`]. A query's scratch
//! (`scratch.rs`) and the selection's spare buffers (`crate::context`) are kept this way.
//!
//! Taking the value out (rather than borrowing it through a `RefCell`) means a re-entrant user
//! finds the cell empty and starts afresh instead of panicking, and a thread that is exiting
//! simply allocates.

use std::cell::Cell;
use std::thread::LocalKey;

/// Reused buffers that a huge query grew past this many entries are freed after it instead of
/// being kept for the next one.
pub(crate) const KEEP_UP_TO: usize = 1 << 12;

/// What this thread keeps in `cell`, taken out for use: a re-entrant user finds it empty and
/// starts afresh (the default) instead of sharing it, and so does a thread that is exiting.
pub(crate) fn take_from<T: Default>(cell: &'static LocalKey<Cell<T>>) -> T {
    cell.try_with(Cell::take).unwrap_or_default()
}

/// Puts `value` back into this thread's `cell` for the next user; during thread teardown the
/// cell is gone and `value` is simply dropped.
pub(crate) fn put_back<T>(cell: &'static LocalKey<Cell<T>>, value: T) {
    // Ignored failure: see above.
    let _ = cell.try_with(|cell| cell.set(value));
}
