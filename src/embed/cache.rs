//! A file of the vectors an embedder made, so that a text is embedded once, not on every run:
//! [`VectorCache`].
//!
//! What it is for: a process that loads a catalog and embeds its tools (the CLI's
//! `select --embedder`, a short-lived agent) pays the model's milliseconds a tool on every
//! start: ~3 s for the bundled catalog's 222 tools, ~50 s for 4,000. With the cache, only the
//! tools whose text changed are embedded again.
//!
//! What it costs: the vectors in memory (4 bytes a number, 1.5 KB a text for a 384-number
//! model, plus the text), and the file: a header, then each text (length and UTF-8 bytes) and
//! its numbers as little-endian `f32`, so a vector read back is bit for bit the one the model
//! made and the selections made with it are the same; last, a checksum of all of it, so that a
//! file damaged on disk is refused rather than read as other numbers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{EmbedError, Embedder, check_shape};
use crate::fnv::fnv1a_64;

/// The first line of a cache file: what it is and the format's version.
const MAGIC: &[u8] = b"capstore-vectors 1\n";

/// An [`Embedder`] that remembers what another one made, in memory and in a file.
///
/// [`open`](Self::open) reads the file, if there is one; [`embed`](Embedder::embed) embeds only
/// the texts it has not seen, through the wrapped embedder, and remembers them;
/// [`save`](Self::save) writes everything back, replacing the file in one rename (a crash never
/// leaves half a file). The file is tied to one model: it records the [`Embedder::model_id`] and
/// [`Embedder::dimensions`] that made it, and one made by another model is refused, since its
/// vectors would be silently wrong.
///
/// Whatever goes through [`embed`](Embedder::embed) is kept and saved, queries included if you
/// pass them: give the cache to [`embed_missing`](super::embed_missing) for the tools and the
/// model itself to the [`ContextBuilder`](crate::context::ContextBuilder) for the messages, as
/// the CLI does, and no message is written to disk.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use capstore::embed::{embed_missing, EmbedError, Embedder, VectorCache};
/// use capstore::{Store, Tool, TOOLS, VECTORS};
///
/// /// Counts the texts it embeds.
/// #[derive(Default)]
/// struct Lengths(AtomicUsize);
/// impl Embedder for Lengths {
///     fn model_id(&self) -> &str { "lengths" }
///     fn dimensions(&self) -> usize { 2 }
///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
///         self.0.fetch_add(texts.len(), Ordering::Relaxed);
///         Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
///     }
/// }
/// let path = std::env::temp_dir().join(format!("capstore-doc-{}.vectors", std::process::id()));
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "first tool")))?;
///
/// let model = Arc::new(Lengths::default());
/// let cache = VectorCache::open(model.clone(), &path)?;
/// embed_missing(&store, &cache)?;
/// cache.save()?;
/// assert_eq!(model.0.load(Ordering::Relaxed), 1);
///
/// // The next run reads the vector back instead of embedding the tool again.
/// let again = Store::new();
/// again.write(|tx| tx.insert(&TOOLS, Tool::new("a", "first tool")))?;
/// let cache = VectorCache::open(model.clone(), &path)?;
/// assert_eq!(embed_missing(&again, &cache)?.embedded, 1);
/// assert_eq!(model.0.load(Ordering::Relaxed), 1);
/// assert_eq!(again.snapshot().get(&VECTORS, "a")?, store.snapshot().get(&VECTORS, "a")?);
/// std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct VectorCache {
    inner: Arc<dyn Embedder>,
    path: PathBuf,
    state: Mutex<State>,
}

/// What the cache holds, behind its lock.
#[derive(Default)]
struct State {
    vectors: HashMap<String, Vec<f32>>,
    /// Whether a text was embedded since the file was read or last saved.
    unsaved: bool,
}

impl VectorCache {
    /// The cache of `embedder`'s vectors kept in the file at `path`: read from it when it
    /// exists, empty when it does not or is empty (the first [`save`](Self::save) writes it).
    ///
    /// # Errors
    /// [`EmbedError::Cache`] when the file cannot be read, is not a vector cache, is cut short,
    /// or was made by another model or with another length of vector. The file is left as it
    /// is; remove it to start afresh.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use capstore::embed::{EmbedError, Embedder, VectorCache};
    /// # struct Toy;
    /// # impl Embedder for Toy {
    /// #     fn model_id(&self) -> &str { "toy" }
    /// #     fn dimensions(&self) -> usize { 1 }
    /// #     fn embed(&self, t: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> { Ok(vec![vec![1.0]; t.len()]) }
    /// # }
    /// let path = std::env::temp_dir().join(format!("capstore-doc-open-{}", std::process::id()));
    /// std::fs::write(&path, "not vectors")?;
    /// let err = VectorCache::open(Arc::new(Toy), &path).err().unwrap();
    /// assert!(matches!(err, EmbedError::Cache { .. }));
    /// assert!(err.to_string().contains("not a capstore vector cache"));
    /// std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(embedder: Arc<dyn Embedder>, path: impl AsRef<Path>) -> Result<Self, EmbedError> {
        let path = path.as_ref().to_path_buf();
        let vectors = match std::fs::read(&path) {
            Ok(bytes) => {
                read(&bytes, embedder.as_ref()).map_err(|reason| cache_error(&path, reason))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => HashMap::new(),
            Err(e) => return Err(cache_error(&path, e.to_string())),
        };
        Ok(VectorCache {
            inner: embedder,
            path,
            state: Mutex::new(State {
                vectors,
                unsaved: false,
            }),
        })
    }

    /// How many texts the cache holds a vector for.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use capstore::embed::{EmbedError, Embedder, VectorCache};
    /// # struct Toy;
    /// # impl Embedder for Toy {
    /// #     fn model_id(&self) -> &str { "toy" }
    /// #     fn dimensions(&self) -> usize { 1 }
    /// #     fn embed(&self, t: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> { Ok(vec![vec![1.0]; t.len()]) }
    /// # }
    /// let cache = VectorCache::open(Arc::new(Toy), "/no/such/dir/cache.vectors")?;
    /// assert_eq!(cache.len(), 0);
    /// cache.embed(&["a", "b", "a"])?;
    /// assert_eq!(cache.len(), 2);
    /// # Ok::<(), EmbedError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.state.lock().vectors.len()
    }

    /// Whether the cache holds no vector.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use capstore::embed::{EmbedError, Embedder, VectorCache};
    /// # struct Toy;
    /// # impl Embedder for Toy {
    /// #     fn model_id(&self) -> &str { "toy" }
    /// #     fn dimensions(&self) -> usize { 1 }
    /// #     fn embed(&self, t: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> { Ok(vec![vec![1.0]; t.len()]) }
    /// # }
    /// assert!(VectorCache::open(Arc::new(Toy), "/no/such/file")?.is_empty());
    /// # Ok::<(), EmbedError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file the cache reads and saves.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use capstore::embed::{EmbedError, Embedder, VectorCache};
    /// # struct Toy;
    /// # impl Embedder for Toy {
    /// #     fn model_id(&self) -> &str { "toy" }
    /// #     fn dimensions(&self) -> usize { 1 }
    /// #     fn embed(&self, t: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> { Ok(vec![vec![1.0]; t.len()]) }
    /// # }
    /// let cache = VectorCache::open(Arc::new(Toy), "/no/such/file")?;
    /// assert_eq!(cache.path(), std::path::Path::new("/no/such/file"));
    /// # Ok::<(), EmbedError>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes every vector to the file, when any was embedded since it was read or last saved:
    /// to a file beside it, then renamed over it, so that readers see the old file or the new
    /// one, never half of one. Texts are written in order, so the same vectors make the same
    /// bytes.
    ///
    /// # Errors
    /// [`EmbedError::Cache`] when the file cannot be written (its directory missing, no
    /// permission, a full disk); the old file, if any, is left as it was.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use capstore::embed::{EmbedError, Embedder, VectorCache};
    /// # struct Toy;
    /// # impl Embedder for Toy {
    /// #     fn model_id(&self) -> &str { "toy" }
    /// #     fn dimensions(&self) -> usize { 1 }
    /// #     fn embed(&self, t: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> { Ok(vec![vec![1.0]; t.len()]) }
    /// # }
    /// let cache = VectorCache::open(Arc::new(Toy), "/no/such/dir/cache.vectors")?;
    /// cache.save()?; // nothing new: nothing written
    /// cache.embed(&["a"])?;
    /// assert!(matches!(cache.save(), Err(EmbedError::Cache { .. })));
    /// # Ok::<(), EmbedError>(())
    /// ```
    pub fn save(&self) -> Result<(), EmbedError> {
        let mut state = self.state.lock();
        if !state.unsaved {
            return Ok(());
        }
        let bytes = write(&state.vectors, self.inner.as_ref());
        let mut temporary = self.path.clone().into_os_string();
        temporary.push(format!(".{}.tmp", std::process::id()));
        let temporary = PathBuf::from(temporary);
        let written = std::fs::write(&temporary, bytes)
            .and_then(|()| std::fs::rename(&temporary, &self.path));
        if let Err(e) = written {
            // Best effort: the temporary file may not even exist.
            let _ = std::fs::remove_file(&temporary);
            return Err(cache_error(&self.path, e.to_string()));
        }
        state.unsaved = false;
        Ok(())
    }
}

impl std::fmt::Debug for VectorCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorCache")
            .field("model_id", &self.inner.model_id())
            .field("path", &self.path)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl Embedder for VectorCache {
    /// The wrapped embedder's.
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    /// The wrapped embedder's.
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    /// The vectors of `texts`: those the cache holds as they are, the others made by the
    /// wrapped embedder in one call (each text once) and remembered. The lock is not held while
    /// the model runs; two threads embedding the same new text at once both run it.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut missing: Vec<&str> = {
            let state = self.state.lock();
            texts
                .iter()
                .copied()
                .filter(|text| !state.vectors.contains_key(*text))
                .collect()
        };
        missing.sort_unstable();
        missing.dedup();
        if !missing.is_empty() {
            let made = self.inner.embed(&missing)?;
            check_shape(self.inner.as_ref(), missing.len(), &made)?;
            let mut state = self.state.lock();
            for (text, vector) in missing.iter().zip(made) {
                if state.vectors.insert((*text).to_string(), vector).is_none() {
                    state.unsaved = true;
                }
            }
        }
        let state = self.state.lock();
        texts
            .iter()
            .map(|text| {
                state
                    .vectors
                    .get(*text)
                    .cloned()
                    .ok_or_else(|| EmbedError::Embed {
                        reason: format!("the vector cache lost the vector of {text:?}"),
                    })
            })
            .collect()
    }
}

fn cache_error(path: &Path, reason: String) -> EmbedError {
    EmbedError::Cache {
        path: path.display().to_string(),
        reason,
    }
}

/// The file's bytes: [`MAGIC`], the model id and the dimensions each on a line, then every
/// text in order, each as its length (u32, little-endian), its bytes and its numbers, then the
/// FNV-1a (64 bits) of all that, little-endian: a check against damage, not tampering.
fn write(vectors: &HashMap<String, Vec<f32>>, embedder: &dyn Embedder) -> Vec<u8> {
    let dims = embedder.dimensions();
    let mut texts: Vec<(&String, &Vec<f32>)> = vectors.iter().collect();
    texts.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut bytes = Vec::with_capacity(64 + texts.len() * (4 + 64 + 4 * dims));
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(format!("{}\n{dims}\n", embedder.model_id()).as_bytes());
    for (text, vector) in texts {
        // A length must fit in 4 bytes: a text of 4 GB or more (no model reads one) stays in
        // memory but is not written, rather than written cut.
        let Ok(length) = u32::try_from(text.len()) else {
            continue;
        };
        bytes.extend_from_slice(&length.to_le_bytes());
        bytes.extend_from_slice(text.as_bytes());
        for x in vector {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    let sum = fnv1a_64(&bytes);
    bytes.extend_from_slice(&sum.to_le_bytes());
    bytes
}

/// The vectors of a file [`write`] made for `embedder`'s model, or why it is not one. An empty
/// file (made ready for the cache, say by `mktemp`) is an empty cache.
fn read(bytes: &[u8], embedder: &dyn Embedder) -> Result<HashMap<String, Vec<f32>>, String> {
    if bytes.is_empty() {
        return Ok(HashMap::new());
    }
    let rest = bytes
        .strip_prefix(MAGIC)
        .ok_or("not a capstore vector cache (its first line is not `capstore-vectors 1`)")?;
    let (model, rest) = line(rest).ok_or("cut short in its header")?;
    let (dims, mut rest) = line(rest).ok_or("cut short in its header")?;
    if model != embedder.model_id() {
        return Err(format!(
            "made by the model `{model}`, not `{}`",
            embedder.model_id()
        ));
    }
    let dims: usize = dims
        .parse()
        .map_err(|_| format!("its vector length `{dims}` is not a number"))?;
    if dims != embedder.dimensions() {
        return Err(format!(
            "holds vectors of {dims} numbers, the model makes {}",
            embedder.dimensions()
        ));
    }
    let (records, sum) = rest
        .split_last_chunk::<8>()
        .ok_or("cut short after its header")?;
    // Everything but the checksum's own 8 bytes.
    let body = bytes.len() - sum.len();
    if fnv1a_64(bytes.get(..body).unwrap_or_default()) != u64::from_le_bytes(*sum) {
        return Err(
            "damaged: its checksum does not match what it holds (cut short or changed)".into(),
        );
    }
    rest = records;
    let mut vectors = HashMap::new();
    while !rest.is_empty() {
        let at = body - rest.len();
        let cut = || format!("cut short at byte {at}");
        let (length, after) = rest.split_first_chunk::<4>().ok_or_else(cut)?;
        let length = usize::try_from(u32::from_le_bytes(*length)).map_err(|_| cut())?;
        let (text, after) = after.split_at_checked(length).ok_or_else(cut)?;
        let text =
            std::str::from_utf8(text).map_err(|_| format!("the text at byte {at} is not UTF-8"))?;
        let (numbers, after) = after
            .split_at_checked(dims.checked_mul(4).ok_or_else(cut)?)
            .ok_or_else(cut)?;
        let vector: Vec<f32> = numbers
            .as_chunks::<4>()
            .0
            .iter()
            .map(|b| f32::from_le_bytes(*b))
            .collect();
        if vectors.insert(text.to_string(), vector).is_some() {
            return Err(format!("the text at byte {at} is there twice"));
        }
        rest = after;
    }
    Ok(vectors)
}

/// The UTF-8 text up to the next newline, and what follows it.
fn line(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let end = bytes.iter().position(|&b| b == b'\n')?;
    let text = std::str::from_utf8(bytes.get(..end)?).ok()?;
    Some((text, bytes.get(end + 1..)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Toy;
    impl Embedder for Toy {
        fn model_id(&self) -> &str {
            "toy"
        }
        fn dimensions(&self) -> usize {
            3
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            Ok(texts
                .iter()
                .map(|t| vec![t.len() as f32, 0.1, -f32::MIN_POSITIVE])
                .collect())
        }
    }

    fn sample() -> HashMap<String, Vec<f32>> {
        HashMap::from([
            ("é, a text".to_string(), vec![1.0, f32::EPSILON, -0.0]),
            (String::new(), vec![0.1, 0.2, 0.3]),
        ])
    }

    #[test]
    fn what_is_written_reads_back_bit_for_bit() {
        let bytes = write(&sample(), &Toy);
        let back = read(&bytes, &Toy).expect("read");
        assert_eq!(back.len(), 2);
        for (text, vector) in sample() {
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&back[&text]), bits(&vector));
        }
        // The same vectors make the same bytes.
        assert_eq!(write(&back, &Toy), bytes);
    }

    #[test]
    fn every_cut_or_changed_byte_is_refused_not_misread() {
        let bytes = write(&sample(), &Toy);
        // An empty file is an empty cache; any other cut is refused.
        assert_eq!(read(&[], &Toy), Ok(HashMap::new()));
        for end in 1..bytes.len() {
            let read = read(&bytes[..end], &Toy);
            assert!(read.is_err(), "cut at {end} read as {read:?}");
        }
        for at in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[at] ^= 0x10;
            let read = read(&changed, &Toy);
            assert!(read.is_err(), "byte {at} changed, read as {read:?}");
        }
    }

    /// A file whose checksum holds but whose records do not (made by hand, not by `write`).
    #[test]
    fn records_are_checked_even_under_a_good_checksum() {
        let sealed = |body: Vec<u8>| {
            let mut bytes = body.clone();
            bytes.extend_from_slice(&fnv1a_64(&body).to_le_bytes());
            bytes
        };
        let header = [MAGIC, b"toy\n3\n"].concat();
        let record = [&1u32.to_le_bytes()[..], b"a", &[0; 12]].concat();
        let twice = sealed([header.clone(), record.clone(), record.clone()].concat());
        assert_eq!(
            read(&twice, &Toy).unwrap_err(),
            format!(
                "the text at byte {} is there twice",
                header.len() + record.len()
            )
        );
        let cut = sealed([header.clone(), record[..7].to_vec()].concat());
        assert!(
            read(&cut, &Toy)
                .unwrap_err()
                .starts_with("cut short at byte")
        );
        let not_utf8 = sealed([header.clone(), vec![1, 0, 0, 0, 0xff], vec![0; 12]].concat());
        assert!(read(&not_utf8, &Toy).unwrap_err().ends_with("is not UTF-8"));
        assert_eq!(read(&sealed(header), &Toy), Ok(HashMap::new()));
    }
}
