//! Tool vectors in the store: the [`VECTORS`](crate::VECTORS) table, filling it, and the exact
//! cosine top-k over it.

use std::sync::Arc;

use crate::store::{BUILTIN_SCHEMA, RecordError, Snapshot, Store, StoreError, Table, TableSchema};
use crate::tools::{TOOLS, Tool};

use super::{EmbedError, Embedder};

/// A tool's embedding, as the [`VECTORS`](crate::VECTORS) table keeps it: unit length, tagged
/// with the model that made it, keyed by the tool's key.
///
/// The table follows the tools table ([`TableSchema::follows`]): writing or removing a tool
/// removes its vector in the same transaction, so a snapshot never pairs a tool with a vector
/// made for another version of it. [`embed_missing`] fills the table.
///
/// ```
/// use capstore::embed::ToolVector;
/// let v = ToolVector::new("weather/get_forecast", "toy-v1", vec![3.0, 4.0]);
/// assert_eq!(&*v.vector, [0.6, 0.8]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolVector {
    /// The tool's key (`source/name`).
    pub key: Arc<str>,
    /// [`Embedder::model_id`] of the model that made it.
    pub model: Arc<str>,
    /// The vector, scaled to unit length (all zeros stays all zeros).
    pub vector: Arc<[f32]>,
}

impl ToolVector {
    /// The vector of tool `key` made by model `model`, scaled to unit length.
    ///
    /// ```
    /// let v = capstore::embed::ToolVector::new("a", "m", vec![0.0, 2.0]);
    /// assert_eq!((&*v.key, &*v.vector), ("a", &[0.0, 1.0][..]));
    /// ```
    pub fn new(key: impl Into<Arc<str>>, model: impl Into<Arc<str>>, vector: Vec<f32>) -> Self {
        ToolVector {
            key: key.into(),
            model: model.into(),
            vector: normalized(vector).into(),
        }
    }
}

/// `vector` scaled to unit length; a zero (or non-finite) norm leaves it as it is.
pub(crate) fn normalized(mut vector: Vec<f32>) -> Vec<f32> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm.is_normal() {
        for x in &mut vector {
            *x /= norm;
        }
    }
    vector
}

/// The `vectors` table's schema: keyed by tool key, following the tools table.
pub(crate) fn schema() -> TableSchema<ToolVector> {
    TableSchema::new("vectors", |v: &ToolVector| v.key.to_string())
        .follows(&TOOLS)
        .validator(|v: &ToolVector| {
            if v.vector.is_empty() {
                return Err(RecordError::Invalid {
                    field: "vector",
                    reason: "must not be empty".into(),
                });
            }
            if !v.vector.iter().all(|x| x.is_finite()) {
                return Err(RecordError::Invalid {
                    field: "vector",
                    reason: "must hold finite numbers only".into(),
                });
            }
            Ok(())
        })
}

/// The text a tool is embedded from: its name cut into words where the BM25 tokenizer cuts
/// identifiers (`getWeatherAlerts` reads `get Weather Alerts`, `get_weather_alerts` reads
/// `get weather alerts`), a colon, and its description.
///
/// A sentence embedder reads words, not identifiers: its tokenizer cuts `getPostmodernTheory`
/// into sub-word pieces that mean little. Splitting the name raised all-MiniLM-L6-v2's own
/// nDCG@10 on Seal-Tools, whose names are camel case, from 60.2 to 63.5 (BENCHMARKS-LOG.md,
/// "Hybrid retrieval").
///
/// ```
/// use capstore::{embed::embedding_text, Tool};
/// let tool = Tool::new("getForecast", "Weather forecast for a city");
/// assert_eq!(embedding_text(&tool), "get Forecast: Weather forecast for a city");
/// let tool = Tool::new("list_HTTPServers", "Servers");
/// assert_eq!(embedding_text(&tool), "list HTTP Servers: Servers");
/// ```
pub fn embedding_text(tool: &Tool) -> String {
    let mut text = String::with_capacity(tool.name.len() + 2 + tool.description.len());
    for word in tool.name.split(|c: char| !c.is_alphanumeric()) {
        crate::bm25::split_identifier(word, |part| {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(part);
        });
    }
    text.push_str(": ");
    text.push_str(&tool.description);
    text
}

/// What [`embed_missing`] did.
///
/// ```
/// let report = capstore::embed::EmbedReport::default();
/// assert_eq!((report.embedded, report.stale), (0, 0));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbedReport {
    /// Tools embedded and stored.
    pub embedded: usize,
    /// Tools embedded but changed or removed meanwhile: their vectors were not stored (call
    /// again to embed their new versions).
    pub stale: usize,
    /// The version of the commit that stored them, if anything was stored.
    pub version: Option<u64>,
}

/// How many texts are sent to the embedder at once.
const EMBED_BATCH: usize = 64;

/// Embeds every tool of `store` that has no vector from `embedder`'s model yet, and stores the
/// vectors in one commit.
///
/// The embedding runs on a snapshot, outside any lock (it takes milliseconds a tool); only the
/// commit of the finished vectors holds the writer lock. A tool changed or removed while its
/// vector was made gets none (counted in [`EmbedReport::stale`]): the commit stores a vector
/// only beside the very tool row it was made from. On an error nothing is stored.
///
/// ```
/// use capstore::embed::{embed_missing, EmbedError, Embedder};
/// use capstore::{Store, Tool, TOOLS, VECTORS};
///
/// struct Lengths;
/// impl Embedder for Lengths {
///     fn model_id(&self) -> &str { "lengths" }
///     fn dimensions(&self) -> usize { 2 }
///     fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
///         Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
///     }
/// }
/// let store = Store::new();
/// store.write(|tx| tx.insert(&TOOLS, Tool::new("a", "first tool")))?;
/// assert_eq!(embed_missing(&store, &Lengths)?.embedded, 1);
/// assert_eq!(embed_missing(&store, &Lengths)?.embedded, 0); // nothing missing now
/// assert!(store.snapshot().get(&VECTORS, "a")?.is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn embed_missing(store: &Store, embedder: &dyn Embedder) -> Result<EmbedReport, EmbedError> {
    let snapshot = store.snapshot();
    let model = embedder.model_id();
    let tools = snapshot.iter(&TOOLS).map_err(store_error)?;
    let mut missing: Vec<(Arc<str>, Arc<Tool>)> = Vec::new();
    for (key, _) in tools {
        let current = snapshot.get(&VECTORS, key).map_err(store_error)?;
        if current.is_some_and(|v| &*v.model == model) {
            continue;
        }
        if let Some(tool) = snapshot.get_arc(&TOOLS, key).map_err(store_error)? {
            missing.push((Arc::clone(key), tool));
        }
    }
    let mut vectors = Vec::with_capacity(missing.len());
    for batch in missing.chunks(EMBED_BATCH) {
        let texts: Vec<String> = batch.iter().map(|(_, tool)| embedding_text(tool)).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let embedded = embedder.embed(&texts)?;
        check_shape(embedder, texts.len(), &embedded)?;
        vectors.extend(embedded);
    }
    let mut report = EmbedReport::default();
    if missing.is_empty() {
        return Ok(report);
    }
    let mut tx = store.begin();
    for ((key, tool), vector) in missing.into_iter().zip(vectors) {
        let still = tx.view().get_arc(&TOOLS, &key).map_err(store_error)?;
        if !still.is_some_and(|now| Arc::ptr_eq(&now, &tool)) {
            report.stale += 1;
            continue;
        }
        tx.upsert(&VECTORS, ToolVector::new(key, model, vector))
            .map_err(store_error)?;
        report.embedded += 1;
    }
    if report.embedded > 0 {
        report.version = Some(tx.commit().version);
    }
    Ok(report)
}

/// Checks that `embedder` gave `count` vectors of its declared length.
pub(crate) fn check_shape(
    embedder: &dyn Embedder,
    count: usize,
    vectors: &[Vec<f32>],
) -> Result<(), EmbedError> {
    let dims = embedder.dimensions();
    if vectors.len() != count {
        return Err(EmbedError::Shape {
            expected: format!("{count} vectors"),
            got: format!("{} vectors", vectors.len()),
        });
    }
    match vectors.iter().find(|v| v.len() != dims) {
        Some(v) => Err(EmbedError::Shape {
            expected: format!("vectors of {dims} numbers"),
            got: format!("a vector of {} numbers", v.len()),
        }),
        None => Ok(()),
    }
}

fn store_error(error: StoreError) -> EmbedError {
    EmbedError::Embed {
        reason: format!("the store: {error}"),
    }
}

/// A tool the dense search found: its key and the cosine of its vector with the query's.
///
/// ```
/// use capstore::embed::DenseHit;
/// let hit = DenseHit { key: "a".into(), cosine: 0.5 };
/// assert_eq!(hit.cosine, 0.5);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct DenseHit {
    /// The tool's key.
    pub key: Arc<str>,
    /// The cosine similarity of the tool's vector and the query's (-1 to 1).
    pub cosine: f32,
}

/// The `k` tools of `snapshot` whose vectors from `model` are nearest `query` by cosine, best
/// first (ties by key): an exact scan of every vector, `dimensions` multiply-adds each.
/// `query` need not be unit length; vectors of another model or length are passed over.
///
/// ```
/// use capstore::embed::{nearest, ToolVector};
/// use capstore::{Store, Tool, TOOLS, VECTORS};
/// let store = Store::new();
/// store.write(|tx| {
///     tx.insert(&TOOLS, Tool::new("north", "up"))?;
///     tx.insert(&TOOLS, Tool::new("east", "right"))?;
///     tx.insert(&VECTORS, ToolVector::new("north", "toy", vec![0.0, 1.0]))?;
///     tx.insert(&VECTORS, ToolVector::new("east", "toy", vec![1.0, 0.0]))
/// })?;
/// let hits = nearest(&store.snapshot(), "toy", &[0.1, 1.0], 1)?;
/// assert_eq!(&*hits[0].key, "north");
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub fn nearest(
    snapshot: &Snapshot,
    model: &str,
    query: &[f32],
    k: usize,
) -> Result<Vec<DenseHit>, StoreError> {
    Ok(nearest_keys(snapshot, model, query, k)?
        .into_iter()
        .map(|(key, cosine)| DenseHit {
            key: Arc::clone(key),
            cosine,
        })
        .collect())
}

/// [`nearest`], with the keys borrowed from the snapshot.
pub(crate) fn nearest_keys<'s>(
    snapshot: &'s Snapshot,
    model: &str,
    query: &[f32],
    k: usize,
) -> Result<Vec<(&'s Arc<str>, f32)>, StoreError> {
    let vectors = vectors_of(snapshot, model, query.len())?;
    Ok(top_k(vectors, &normalized(query.to_vec()), k))
}

/// The vectors of `snapshot` made by `model` with `dims` numbers, with their keys, in key
/// order: what both scans read (the others are passed over).
fn vectors_of<'s>(
    snapshot: &'s Snapshot,
    model: &str,
    dims: usize,
) -> Result<impl Iterator<Item = (&'s Arc<str>, &'s [f32])>, StoreError> {
    Ok(snapshot
        .iter(&VECTORS)?
        .filter(move |(_, row)| row.vector.len() == dims && *row.model == *model)
        .map(|(key, row)| (key, &*row.vector)))
}

/// The vectors of one state of the [`VECTORS`](crate::VECTORS) table, those of one model and
/// length, in one array in key order: what the scan reads when the same table state is
/// searched again and again (a conversation's turns between two writes).
struct Matrix {
    /// The table's rows it was built from: [`imbl::OrdMap::ptr_eq`] tells the same state in a
    /// later snapshot; holding them keeps that state's rows alive while it is cached.
    rows: imbl::OrdMap<Arc<str>, crate::store::Row>,
    model: Arc<str>,
    dims: usize,
    keys: Vec<Arc<str>>,
    /// `keys.len()` vectors of `dims` numbers, back to back.
    numbers: Vec<f32>,
}

impl Matrix {
    fn fits(
        &self,
        rows: &imbl::OrdMap<Arc<str>, crate::store::Row>,
        model: &str,
        dims: usize,
    ) -> bool {
        self.rows.ptr_eq(rows) && *self.model == *model && self.dims == dims
    }
}

/// What a [`NearestCache`] remembers of the table state it last saw.
enum Seen {
    /// Searched once, by the plain scan.
    Once(imbl::OrdMap<Arc<str>, crate::store::Row>),
    /// Searched again: laid out for the scan.
    Again(Arc<Matrix>),
}

/// [`nearest_keys`] for a searcher that asks about the same snapshot many times (a
/// [`ContextBuilder`](crate::context::ContextBuilder), turn after turn): the second search of
/// one state of the vectors table lays its vectors out in one array (a copy of them, `4 ×
/// dimensions` bytes a tool), and later searches of that state scan the array, not the table's
/// rows one by one: 1.7–2.2× faster at 10,000 tools (measured in commit `f2efeb2`). A changed
/// table is scanned as before until it is searched twice, so a store written before every
/// search pays nothing more. The hits are the plain scan's, to the bit and in the same order.
#[derive(Default)]
pub(crate) struct NearestCache(parking_lot::Mutex<Option<Seen>>);

impl NearestCache {
    /// [`nearest_keys`], from the array when this state of the table was searched before.
    pub(crate) fn nearest_keys<'s>(
        &self,
        snapshot: &'s Snapshot,
        model: &str,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<(&'s Arc<str>, f32)>, StoreError> {
        let (_, state) = snapshot.resolve(&VECTORS)?;
        let rows = &state.rows;
        let cached = {
            let mut seen = self.0.lock();
            match &*seen {
                Some(Seen::Again(matrix)) if matrix.fits(rows, model, query.len()) => {
                    Some(Arc::clone(matrix))
                }
                Some(Seen::Once(before)) if before.ptr_eq(rows) => None,
                _ => {
                    *seen = Some(Seen::Once(rows.clone()));
                    return nearest_keys(snapshot, model, query, k);
                }
            }
        };
        let matrix = match cached {
            Some(matrix) => matrix,
            None => {
                // Built outside the lock: other threads scan the rows meanwhile.
                let matrix = Arc::new(lay_out(snapshot, rows, model, query.len())?);
                *self.0.lock() = Some(Seen::Again(Arc::clone(&matrix)));
                matrix
            }
        };
        let best = top_k(
            matrix
                .keys
                .iter()
                .zip(matrix.numbers.chunks_exact(matrix.dims.max(1))),
            &normalized(query.to_vec()),
            k,
        );
        // The snapshot's own keys, so the hits borrow from it as the plain scan's do.
        Ok(best
            .into_iter()
            .filter_map(|(key, cosine)| rows.get_key_value(key).map(|(key, _)| (key, cosine)))
            .collect())
    }
}

/// The vectors of `snapshot` made by `model` with `dims` numbers, in key order, in one array;
/// `rows` is the snapshot's vectors table, which the array is kept for.
fn lay_out(
    snapshot: &Snapshot,
    rows: &imbl::OrdMap<Arc<str>, crate::store::Row>,
    model: &str,
    dims: usize,
) -> Result<Matrix, StoreError> {
    let mut keys = Vec::new();
    let mut numbers = Vec::new();
    for (key, vector) in vectors_of(snapshot, model, dims)? {
        keys.push(Arc::clone(key));
        numbers.extend_from_slice(vector);
    }
    Ok(Matrix {
        rows: rows.clone(),
        model: model.into(),
        dims,
        keys,
        numbers,
    })
}

/// The `k` of `vectors` (keys in order, with their vectors) nearest the unit vector `query`,
/// best first; among equal cosines the earlier key.
fn top_k<'k>(
    vectors: impl Iterator<Item = (&'k Arc<str>, &'k [f32])>,
    query: &[f32],
    k: usize,
) -> Vec<(&'k Arc<str>, f32)> {
    let mut best: Vec<(f32, &Arc<str>)> = Vec::with_capacity(k.saturating_add(1));
    if k == 0 {
        return Vec::new();
    }
    for (key, vector) in vectors {
        let cosine = dot(vector, query);
        // Keys come in order, so among equal cosines the earlier key is kept.
        if best.len() == k && best.last().is_some_and(|&(worst, _)| cosine <= worst) {
            continue;
        }
        let at = best.partition_point(|&(c, _)| c >= cosine);
        best.insert(at, (cosine, key));
        best.truncate(k);
    }
    best.into_iter()
        .map(|(cosine, key)| (key, cosine))
        .collect()
}

/// The dot product of `a` and `b` (of equal length), summed in eight lanes and then across
/// them, always in the same order: the compiler vectorises it, where one running sum is a
/// chain of dependent additions it may not reorder (`select/hybrid` in `benches/select.rs`
/// times the scan).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (a8, a_tail) = a.as_chunks::<8>();
    let (b8, b_tail) = b.as_chunks::<8>();
    let mut lanes = [0.0f32; 8];
    for (x, y) in a8.iter().zip(b8) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += x * y;
        }
    }
    let tail: f32 = a_tail.iter().zip(b_tail).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
}

// Position 5 of the built-in tables, in the order `crate::tables` declares them.
/// The built-in `vectors` table (see [`ToolVector`]): each tool's
/// embedding, key = the tool's key; no indexes. It follows the tools table: writing or removing
/// a tool removes its vector. Fill it with [`embed_missing`].
///
/// ```
/// use capstore::{embed::ToolVector, Store, Tool, TOOLS, VECTORS};
/// let store = Store::new();
/// store.write(|tx| {
///     tx.insert(&TOOLS, Tool::new("a", "b"))?;
///     tx.insert(&VECTORS, ToolVector::new("a", "toy", vec![1.0, 0.0]))
/// })?;
/// store.write(|tx| tx.upsert(&TOOLS, Tool::new("a", "changed")))?;
/// assert!(!store.snapshot().contains(&VECTORS, "a")?);
/// # Ok::<(), capstore::StoreError>(())
/// ```
pub const VECTORS: Table<ToolVector> = Table::new(5, BUILTIN_SCHEMA);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    /// A store of `n` tools with vectors of 5 numbers from `seed`, some equal (ties), some of
    /// another model, some of another length.
    fn store_of(n: usize, seed: u64) -> Store {
        let store = Store::new();
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 7) as f32 - 3.0
        };
        store
            .write(|tx| {
                for i in 0..n {
                    let key = format!("t{i:03}");
                    tx.insert(&TOOLS, Tool::new(key.as_str(), "a tool"))?;
                    let (model, dims) = match i % 11 {
                        3 => ("other", 5),
                        7 => ("m", 4),
                        _ => ("m", 5),
                    };
                    let vector: Vec<f32> = (0..dims).map(|_| next()).collect();
                    tx.insert(&VECTORS, ToolVector::new(key.as_str(), model, vector))?;
                }
                Ok::<_, StoreError>(())
            })
            .expect("store");
        store
    }

    #[test]
    fn the_cached_scan_finds_what_the_plain_scan_does_before_and_after_writes() {
        let cache = NearestCache::default();
        let store = store_of(60, 7);
        let queries = [
            [1.0, 0.0, -2.0, 0.5, 3.0],
            [0.0; 5],
            [-1.0, 1.0, 1.0, -1.0, 0.0],
        ];
        for round in 0..3 {
            let snapshot = store.snapshot();
            for _ in 0..3 {
                for query in &queries {
                    for k in [0, 1, 7, 40, 100] {
                        let plain = nearest_keys(&snapshot, "m", query, k).expect("plain");
                        let cached = cache
                            .nearest_keys(&snapshot, "m", query, k)
                            .expect("cached");
                        let bits = |hits: &[(&Arc<str>, f32)]| {
                            hits.iter()
                                .map(|(key, c)| (key.to_string(), c.to_bits()))
                                .collect::<Vec<_>>()
                        };
                        assert_eq!(bits(&cached), bits(&plain), "round {round}, k {k}");
                        // The keys are the snapshot's own.
                        for ((a, _), (b, _)) in cached.iter().zip(&plain) {
                            assert!(Arc::ptr_eq(a, b));
                        }
                    }
                }
                // Another model, another length: never the first model's array.
                assert_eq!(
                    cache
                        .nearest_keys(&snapshot, "other", &queries[0], 100)
                        .expect("other")
                        .len(),
                    6
                );
                assert!(
                    cache
                        .nearest_keys(&snapshot, "m", &[1.0; 4], 100)
                        .expect("len 4")
                        .len()
                        == 5
                );
            }
            // A write: one vector replaced, one removed, one added.
            store
                .write(|tx| {
                    tx.upsert(
                        &VECTORS,
                        ToolVector::new("t001", "m", vec![9.0, 9.0, 9.0, 9.0, 9.0]),
                    )?;
                    tx.delete(&TOOLS, &format!("t{:03}", 10 + round))?;
                    tx.insert(&TOOLS, Tool::new(format!("u{round}").as_str(), "new"))?;
                    tx.insert(
                        &VECTORS,
                        ToolVector::new(format!("u{round}"), "m", vec![1.0, 0.0, -2.0, 0.5, 3.0]),
                    )
                })
                .expect("write");
        }
    }

    #[test]
    fn dot_sums_every_product_whatever_the_length() {
        for n in [0, 1, 7, 8, 9, 384, 385] {
            let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 3.0).collect();
            let b: Vec<f32> = (0..n).map(|i| (i % 5) as f32 - 2.0).collect();
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).sum();
            assert!((f64::from(dot(&a, &b)) - plain).abs() < 1e-3, "n = {n}");
        }
    }
}
