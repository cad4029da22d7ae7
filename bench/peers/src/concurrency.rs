//! Selection throughput while a writer commits: 1 and 2 reader threads run
//! `ContextBuilder::select` on snapshots for a fixed time while one writer thread upserts one
//! tool and commits every millisecond.
//!
//! The store changes under the writer (each upsert leaves a dead document behind until a
//! merge drops it), so phases run after a warm-up that brings the store to its steady state
//! ([`warm_up`]) and in the order 1, 2, 2, 1 readers ([`PHASE_ORDER`]): a phase run later does
//! not find a different store from the one before it. When the phases ran 1 then 2 on the
//! freshly built store, the second one found a store with 5,000 more dead documents and its
//! readers were slower for that alone.
//!
//! Readers take `Store::snapshot()` (an `ArcSwap` load: no lock, never waits for a writer) and
//! select on it; the writer holds the store's writer lock only against other writers. The
//! reader loop times every `snapshot()` call, so the report shows the longest one (a wait on
//! the writer would show there), and counts the distinct versions readers saw (they see the
//! writer's commits as they land).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use capstore::context::Turn;
use capstore::{Store, TOOLS, Tool};

use crate::contenders::select_builder;

/// Reader counts of the phases, in the order they run: each count's phases are summed.
pub const PHASE_ORDER: [usize; 4] = [1, 2, 2, 1];

/// The changed definition the writer upserts at its `revision`-th commit.
fn revised(tools: &[Tool], revision: u64) -> Tool {
    let mut tool = tools[revision as usize % tools.len()].clone();
    tool.description = format!("{} revision {revision}", tool.description);
    tool
}

/// Upserts `commits` revisions as fast as it can (untimed), numbered from `*revision`, so that
/// the phases find the store in the state steady writing keeps it in.
pub fn warm_up(store: &Store, tools: &[Tool], revision: &mut u64, commits: u64) {
    for _ in 0..commits {
        store
            .write(|tx| tx.upsert(&TOOLS, revised(tools, *revision)).map(|_| ()))
            .expect("upsert");
        *revision += 1;
    }
}

pub struct Phase {
    pub readers: usize,
    pub selects: u64,
    pub elapsed: Duration,
    pub commits: u64,
    /// Commits the 1 ms schedule asked for in that time.
    pub commits_due: u64,
    pub max_snapshot: Duration,
    pub versions_seen: u64,
    /// CPU time the readers got (sum over reader threads), from `/proc/thread-self/schedstat`.
    pub reader_cpu: Option<Duration>,
}

/// This thread's time on a CPU so far (Linux), to tell a reader that waited for a core (a
/// busy machine) from one that waited on something else.
fn thread_cpu() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

impl Phase {
    /// Share of the phase's wall time the readers spent on a CPU (1.0 = each had a core).
    pub fn reader_cpu_share(&self) -> Option<f64> {
        self.reader_cpu
            .map(|c| c.as_secs_f64() / (self.elapsed.as_secs_f64() * self.readers as f64))
    }

    /// Selections per second of reader CPU time.
    pub fn selects_per_cpu_sec(&self) -> Option<f64> {
        self.reader_cpu
            .map(|c| self.selects as f64 / c.as_secs_f64())
    }

    pub fn selects_per_sec(&self) -> f64 {
        self.selects as f64 / self.elapsed.as_secs_f64()
    }

    /// The phases of `readers` readers among `phases`, as one (counts and times summed).
    pub fn combined(phases: &[Phase], readers: usize) -> Phase {
        let of = || phases.iter().filter(move |p| p.readers == readers);
        Phase {
            readers,
            selects: of().map(|p| p.selects).sum(),
            elapsed: of().map(|p| p.elapsed).sum(),
            commits: of().map(|p| p.commits).sum(),
            commits_due: of().map(|p| p.commits_due).sum(),
            max_snapshot: of().map(|p| p.max_snapshot).max().unwrap_or_default(),
            versions_seen: of().map(|p| p.versions_seen).sum(),
            reader_cpu: of().map(|p| p.reader_cpu).sum(),
        }
    }
}

struct ReaderStats {
    selects: u64,
    max_snapshot: Duration,
    versions: u64,
    cpu: Option<Duration>,
}

/// One phase: `readers` reader threads and the writer, for `duration`; the writer's
/// revisions continue from `*revision`.
pub fn phase(
    store: &Store,
    tools: &[Tool],
    messages: &Arc<Vec<String>>,
    readers: usize,
    duration: Duration,
    revision: &mut u64,
) -> Phase {
    let first_revision = *revision;
    let stop = Arc::new(AtomicBool::new(false));
    thread::scope(|s| {
        let writer = s.spawn(|| {
            let started = Instant::now();
            let mut next = started;
            let mut commits = 0u64;
            while !stop.load(Ordering::Relaxed) {
                next += Duration::from_millis(1);
                let now = Instant::now();
                if next > now {
                    thread::sleep(next - now);
                } else {
                    // Behind schedule: do not burst to catch up.
                    next = now;
                }
                // Upsert a changed definition of one existing tool.
                let tool = revised(tools, first_revision + commits);
                store
                    .write(|tx| tx.upsert(&TOOLS, tool).map(|_| ()))
                    .expect("upsert");
                commits += 1;
            }
            (commits, started.elapsed())
        });
        let handles: Vec<_> = (0..readers)
            .map(|r| {
                let stop = Arc::clone(&stop);
                let messages = Arc::clone(messages);
                s.spawn(move || {
                    let builder = select_builder(false);
                    let mut st = ReaderStats {
                        selects: 0,
                        max_snapshot: Duration::ZERO,
                        versions: 0,
                        cpu: None,
                    };
                    let cpu_start = thread_cpu();
                    let mut last_version = u64::MAX;
                    // Readers start at different queries.
                    let mut q = r * 997;
                    while !stop.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        let snap = store.snapshot();
                        st.max_snapshot = st.max_snapshot.max(t.elapsed());
                        if snap.version() != last_version {
                            last_version = snap.version();
                            st.versions += 1;
                        }
                        let turn = Turn::new(messages[q % messages.len()].as_str());
                        let selection = builder.select(&snap, &turn).expect("select");
                        std::hint::black_box(selection);
                        st.selects += 1;
                        q += 1;
                    }
                    st.cpu = thread_cpu().zip(cpu_start).map(|(end, start)| end - start);
                    st
                })
            })
            .collect();
        let started = Instant::now();
        thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        let elapsed = started.elapsed();
        let stats: Vec<ReaderStats> = handles
            .into_iter()
            .map(|h| h.join().expect("reader"))
            .collect();
        let (commits, writer_time) = writer.join().expect("writer");
        *revision += commits;
        Phase {
            readers,
            selects: stats.iter().map(|s| s.selects).sum(),
            elapsed,
            commits,
            commits_due: writer_time.as_millis() as u64,
            max_snapshot: stats
                .iter()
                .map(|s| s.max_snapshot)
                .max()
                .unwrap_or_default(),
            versions_seen: stats.iter().map(|s| s.versions).max().unwrap_or(0),
            reader_cpu: stats.iter().map(|s| s.cpu).sum(),
        }
    })
}
