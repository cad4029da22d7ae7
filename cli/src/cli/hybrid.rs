//! `--embedder DIR`, `--lexical-weight W`, `--depth N`, `--vector-cache FILE`: hybrid
//! retrieval for `select` and `eval`, with the local all-MiniLM-L6-v2 embedder read from DIR.

use std::sync::Arc;

use capstore::Store;
use capstore::context::{HybridPolicy, Retrieval};
use capstore::embed::{Embedder, MiniLm, VectorCache, embed_missing};

use super::args::{Args, count, real};

/// The hybrid flags of one command line.
#[derive(Default)]
pub(crate) struct HybridArgs {
    /// The model directory (`--embedder`); hybrid retrieval is on when it is given.
    dir: Option<String>,
    policy: HybridPolicy,
    /// A fusion knob or the cache was given (they need `--embedder`).
    tuned: bool,
    /// Where the vectors are kept between runs (`--vector-cache`).
    cache: Option<String>,
}

impl HybridArgs {
    /// Takes `flag` (and its value) if it is one of the hybrid flags.
    pub(crate) fn accept(&mut self, flag: &str, args: &mut Args<'_>) -> Result<bool, String> {
        match flag {
            "--embedder" => self.dir = Some(args.value(flag)?.to_string()),
            "--lexical-weight" => {
                let weight = real(flag, args.value(flag)?, 0.0, 1.0)? as f32;
                self.policy = HybridPolicy {
                    depth: self.policy.depth,
                    ..HybridPolicy::fixed(weight)
                };
                self.tuned = true;
            }
            "--depth" => {
                self.policy.depth = count(flag, args.value(flag)?, 1, 100_000)?;
                self.tuned = true;
            }
            "--vector-cache" => {
                self.cache = Some(args.value(flag)?.to_string());
                self.tuned = true;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The vector cache's file (`--vector-cache`), if one was given.
    pub(crate) fn cache(&self) -> Option<&str> {
        self.cache.as_deref()
    }

    /// The retrieval these flags ask for, and the embedder it needs, loaded (`None` without
    /// `--embedder`), with its vector cache read.
    pub(crate) fn load(&self) -> Result<(Retrieval, Option<Embedding>), String> {
        let Some(dir) = &self.dir else {
            if self.tuned {
                return Err(
                    "--lexical-weight, --depth and --vector-cache need --embedder DIR".into(),
                );
            }
            return Ok((Retrieval::Lexical, None));
        };
        super::source::progress(&format!("loading the embedding model from {dir}"));
        let model: Arc<dyn Embedder> = Arc::new(MiniLm::load(dir).map_err(|e| e.to_string())?);
        let cache = match &self.cache {
            Some(path) => Some(Arc::new(
                VectorCache::open(Arc::clone(&model), path).map_err(|e| e.to_string())?,
            )),
            None => None,
        };
        Ok((
            Retrieval::Hybrid(self.policy),
            Some(Embedding { model, cache }),
        ))
    }
}

/// The loaded embedder, and its vector cache when `--vector-cache` gave one.
pub(crate) struct Embedding {
    model: Arc<dyn Embedder>,
    cache: Option<Arc<VectorCache>>,
}

impl Embedding {
    /// The model itself: what embeds a user's messages, which are not written to the cache.
    pub(crate) fn model(&self) -> Arc<dyn Embedder> {
        Arc::clone(&self.model)
    }

    /// What embeds texts worth keeping (tools, a benchmark's queries): the cache when there is
    /// one, else the model.
    pub(crate) fn cached(&self) -> Arc<dyn Embedder> {
        match &self.cache {
            Some(cache) => Arc::clone(cache) as Arc<dyn Embedder>,
            None => self.model(),
        }
    }

    /// Writes what the cache learnt to its file (nothing without `--vector-cache`).
    pub(crate) fn save(&self) -> Result<(), String> {
        match &self.cache {
            Some(cache) => cache.save().map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }

    /// Embeds the tools of `store` that have no vector yet (through the cache, which is then
    /// saved), saying so on stderr.
    pub(crate) fn embed_tools(&self, store: &Store) -> Result<(), String> {
        super::source::progress("embedding the tools");
        let started = std::time::Instant::now();
        let cached_before = self.cache.as_ref().map_or(0, |c| c.len());
        let report = embed_missing(store, self.cached().as_ref()).map_err(|e| e.to_string())?;
        let took = started.elapsed().as_secs_f64();
        match &self.cache {
            // Texts, not tools: two tools with one text share a vector.
            Some(cache) => super::source::progress(&format!(
                "embedded {} tools in {took:.1} s ({} texts new to the vector cache {})",
                report.embedded,
                cache.len() - cached_before,
                cache.path().display(),
            )),
            None => super::source::progress(&format!(
                "embedded {} tools in {took:.1} s (--vector-cache FILE keeps them for the next run)",
                report.embedded
            )),
        }
        self.save()
    }
}
