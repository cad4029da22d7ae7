//! `--embedder DIR`, `--lexical-weight W`, `--depth N`: hybrid retrieval for `select` and
//! `eval`, with the local all-MiniLM-L6-v2 embedder read from DIR.

use std::sync::Arc;

use capstore::Store;
use capstore::context::{HybridPolicy, Retrieval};
use capstore::embed::{Embedder, MiniLm, embed_missing};

use super::args::{Args, number};

/// The hybrid flags of one command line.
#[derive(Default)]
pub(crate) struct HybridArgs {
    /// The model directory (`--embedder`); hybrid retrieval is on when it is given.
    dir: Option<String>,
    policy: HybridPolicy,
    /// A fusion knob was given (it needs `--embedder`).
    tuned: bool,
}

impl HybridArgs {
    /// Takes `flag` (and its value) if it is one of the hybrid flags.
    pub(crate) fn accept(&mut self, flag: &str, args: &mut Args<'_>) -> Result<bool, String> {
        match flag {
            "--embedder" => self.dir = Some(args.value(flag)?.to_string()),
            "--lexical-weight" => {
                let weight = number(flag, args.value(flag)?)?;
                self.policy = HybridPolicy {
                    depth: self.policy.depth,
                    ..HybridPolicy::fixed(weight)
                };
                self.tuned = true;
            }
            "--depth" => {
                self.policy.depth = number(flag, args.value(flag)?)?;
                self.tuned = true;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The retrieval these flags ask for, and the embedder it needs, loaded (`None` without
    /// `--embedder`).
    pub(crate) fn load(&self) -> Result<(Retrieval, Option<Arc<dyn Embedder>>), String> {
        let Some(dir) = &self.dir else {
            if self.tuned {
                return Err("--lexical-weight and --depth need --embedder DIR".into());
            }
            return Ok((Retrieval::Lexical, None));
        };
        super::source::progress(&format!("loading the embedding model from {dir}"));
        let model = MiniLm::load(dir).map_err(|e| e.to_string())?;
        Ok((Retrieval::Hybrid(self.policy), Some(Arc::new(model))))
    }
}

/// Embeds the tools of `store` that have no vector from `embedder` yet, saying so on stderr.
pub(crate) fn embed_tools(store: &Store, embedder: &dyn Embedder) -> Result<(), String> {
    super::source::progress("embedding the tools");
    let started = std::time::Instant::now();
    let report = embed_missing(store, embedder).map_err(|e| e.to_string())?;
    super::source::progress(&format!(
        "embedded {} tools in {:.1} s",
        report.embedded,
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}
