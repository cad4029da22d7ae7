//! The event tape: every event of a bus appended to a JSONL file, and read back.
//!
//! The bus tells listeners what happened; the tape keeps it, for the person reading a bad turn
//! afterwards and for evaluations that run over many. Cost: one JSON serialization and one
//! `write` per event, on the emitting thread, under a lock shared by the tape's emitters.
//!
//! The file format is described in the [module documentation](crate::events#tape-format).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use serde::de::DeserializeOwned;

use super::bus::{EventBus, EventSubscription};
use super::event::Event;

/// Why a tape could not be opened or read.
///
/// ```
/// let err = capstore::events::read_tape("/no/such/tape.jsonl").unwrap_err();
/// assert!(err.to_string().starts_with("/no/such/tape.jsonl: "));
/// ```
#[derive(Debug)]
pub enum TapeError {
    /// The file could not be opened, written or read.
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        error: io::Error,
    },
    /// A line is not what the tape holds (an event, a model exchange).
    Parse {
        /// The file.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// What is wrong with it.
        error: serde_json::Error,
    },
}

impl fmt::Display for TapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TapeError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            TapeError::Parse { path, line, error } => {
                write!(f, "{}:{line}: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for TapeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TapeError::Io { error, .. } => Some(error),
            TapeError::Parse { error, .. } => Some(error),
        }
    }
}

struct TapeFile {
    path: PathBuf,
    file: Mutex<File>,
    written: AtomicU64,
    failed: AtomicU64,
}

impl TapeFile {
    fn append(&self, event: &Event) {
        let mut line = match serde_json::to_vec(event) {
            Ok(line) => line,
            Err(_) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        line.push(b'\n');
        match self.file.lock().write_all(&line) {
            Ok(()) => self.written.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.failed.fetch_add(1, Ordering::Relaxed),
        };
    }
}

/// An event sink that appends every event to a JSONL file (see the [format](crate::events#tape-format)). Cheap to
/// clone; `Send + Sync`. A subscriber cannot return an error, so write failures are counted
/// ([`failed`](Self::failed)) rather than raised.
///
/// ```
/// use capstore::events::{read_tape, EventTape};
/// use capstore::{Event, EventBus};
///
/// let path = std::env::temp_dir().join(format!("capstore-doc-tape-{}.jsonl", std::process::id()));
/// let _ = std::fs::remove_file(&path);
/// let bus = EventBus::new();
/// let tape = EventTape::append_to(&path)?;
/// let sub = tape.record(&bus);
/// bus.emit(&Event::TurnStarted { turn: 1, message: "hello".into() });
/// drop(sub);
/// assert_eq!(tape.written(), 1);
/// assert_eq!(read_tape(&path)?, [Event::TurnStarted { turn: 1, message: "hello".into() }]);
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), capstore::events::TapeError>(())
/// ```
#[derive(Clone)]
pub struct EventTape {
    inner: Arc<TapeFile>,
}

impl fmt::Debug for EventTape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventTape")
            .field("path", &self.inner.path)
            .field("written", &self.written())
            .field("failed", &self.failed())
            .finish()
    }
}

impl EventTape {
    /// Opens `path` for appending, creating it if missing.
    ///
    /// ```
    /// assert!(capstore::events::EventTape::append_to("/no/such/dir/tape.jsonl").is_err());
    /// ```
    pub fn append_to(path: impl AsRef<Path>) -> Result<Self, TapeError> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|error| TapeError::Io {
                path: path.clone(),
                error,
            })?;
        Ok(EventTape {
            inner: Arc::new(TapeFile {
                path,
                file: Mutex::new(file),
                written: AtomicU64::new(0),
                failed: AtomicU64::new(0),
            }),
        })
    }

    /// Appends one event.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("capstore-doc-write-{}.jsonl", std::process::id()));
    /// let tape = capstore::events::EventTape::append_to(&path)?;
    /// tape.write(&capstore::Event::CatalogChanged { version: 2, changes: 1 });
    /// assert_eq!(tape.written(), 1);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), capstore::events::TapeError>(())
    /// ```
    pub fn write(&self, event: &Event) {
        self.inner.append(event);
    }

    /// Appends every event `bus` emits from now on, until the subscription is dropped.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("capstore-doc-record-{}.jsonl", std::process::id()));
    /// let bus = capstore::EventBus::new();
    /// let sub = capstore::events::EventTape::append_to(&path)?.record(&bus);
    /// assert_eq!(bus.subscriber_count(), 1);
    /// # drop(sub); std::fs::remove_file(&path).ok();
    /// # Ok::<(), capstore::events::TapeError>(())
    /// ```
    pub fn record(&self, bus: &EventBus) -> EventSubscription {
        let inner = Arc::clone(&self.inner);
        bus.subscribe(move |event| inner.append(event))
    }

    /// The file.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("capstore-doc-path-{}.jsonl", std::process::id()));
    /// let tape = capstore::events::EventTape::append_to(&path)?;
    /// assert_eq!(tape.path(), path);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), capstore::events::TapeError>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// How many events were appended.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("capstore-doc-n-{}.jsonl", std::process::id()));
    /// assert_eq!(capstore::events::EventTape::append_to(&path)?.written(), 0);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), capstore::events::TapeError>(())
    /// ```
    pub fn written(&self) -> u64 {
        self.inner.written.load(Ordering::Relaxed)
    }

    /// How many events could not be written (the disk was full, the file went away).
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("capstore-doc-f-{}.jsonl", std::process::id()));
    /// assert_eq!(capstore::events::EventTape::append_to(&path)?.failed(), 0);
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), capstore::events::TapeError>(())
    /// ```
    pub fn failed(&self) -> u64 {
        self.inner.failed.load(Ordering::Relaxed)
    }
}

/// Reads a tape back into events, in file order. Blank lines are skipped; any other line that
/// is not an event fails with its number.
///
/// ```
/// let path = std::env::temp_dir().join(format!("capstore-doc-read-{}.jsonl", std::process::id()));
/// std::fs::write(&path, "{\"type\":\"catalog_changed\",\"version\":3,\"changes\":1}\n\nnot json\n")?;
/// let err = capstore::events::read_tape(&path).unwrap_err();
/// assert!(err.to_string().contains(":3: expected"));
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_tape(path: impl AsRef<Path>) -> Result<Vec<Event>, TapeError> {
    read_jsonl(path.as_ref())
}

/// The values of a JSONL file, in order, blank lines skipped; a line that is not a `T` fails
/// with its number.
pub(crate) fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, TapeError> {
    let io_error = |error| TapeError::Io {
        path: path.to_path_buf(),
        error,
    };
    let reader = BufReader::new(File::open(path).map_err(io_error)?);
    let mut values = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let line = line.map_err(io_error)?;
        if line.trim().is_empty() {
            continue;
        }
        let value = serde_json::from_str(&line).map_err(|error| TapeError::Parse {
            path: path.to_path_buf(),
            line: n + 1,
            error,
        })?;
        values.push(value);
    }
    Ok(values)
}
