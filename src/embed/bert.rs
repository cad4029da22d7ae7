//! The BERT encoder `MiniLm` runs: token ids and an attention mask in, one vector per token out.
//!
//! This is the plain BERT of Devlin et al. (2018) as Hugging Face's `BertModel` computes it, cut
//! to what a sentence embedder uses: no pooler, no heads, no dropout (inference only), absolute
//! positions, every token in segment 0. Each piece is a few candle-core tensor operations on
//! candle-nn's `Embedding`, `Linear` and `LayerNorm`; the weights are read under the names
//! Hugging Face's checkpoints use (`embeddings.word_embeddings.weight`,
//! `encoder.layer.{i}.attention.self.query.weight`, ...), with or without a `bert.` prefix.
//!
//! Why here and not candle-transformers' `models::bert`: that crate compiles about 125 models to
//! give us this one. Its release build took 255 s of wall time on its own (34 s front end, 221 s
//! code generation; `cargo build --timings`, 2 cores shared with other builds), the longest
//! crate of capstore's whole build and the last to finish; this file is about 220 lines. The
//! operations are the same ones, in the same order, but for GELU: [`Gelu`] computes the same
//! function with an error function the compiler vectorises, where candle's calls libm's one
//! number at a time; the vectors move by at most 1.1 × 10⁻⁷ a component (f32 rounding).

use candle_core::{D, DType, Module, Result, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

use super::gelu::Gelu;

/// The fields of a Hugging Face BERT `config.json` the encoder needs; the others are ignored.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Config {
    /// Rows of the word-embedding table: the tokenizer's vocabulary.
    pub vocab_size: usize,
    /// The width of every token vector.
    pub hidden_size: usize,
    /// Encoder layers, applied one after the other.
    pub num_hidden_layers: usize,
    /// Attention heads per layer; each sees `hidden_size / num_attention_heads` dimensions.
    pub num_attention_heads: usize,
    /// The width of each layer's feed-forward block.
    pub intermediate_size: usize,
    /// The feed-forward activation's name; `"gelu"` is the exact, erf-based GELU.
    pub hidden_act: String,
    /// Rows of the position-embedding table: the longest input the model takes.
    pub max_position_embeddings: usize,
    /// Rows of the token-type (segment) table; only row 0 is used.
    pub type_vocab_size: usize,
    /// The epsilon every LayerNorm adds to the variance.
    pub layer_norm_eps: f64,
    /// `"absolute"` (or absent) for learned absolute positions, the only kind implemented.
    #[serde(default)]
    pub position_embedding_type: Option<String>,
}

/// Token, position and segment embeddings, summed and normalised: the encoder's input.
struct Embeddings {
    /// One row per vocabulary entry.
    words: Embedding,
    /// One row per position, `(max_position_embeddings, hidden)`.
    positions: Tensor,
    /// Segment 0's row, `(hidden)`: every token of a single text is in segment 0.
    segment: Tensor,
    /// Normalises the sum.
    norm: LayerNorm,
}

impl Embeddings {
    /// Reads the three tables and the LayerNorm from `vb` (`embeddings.`).
    fn load(vb: VarBuilder, config: &Config) -> Result<Embeddings> {
        let hidden = config.hidden_size;
        let words = candle_nn::embedding(config.vocab_size, hidden, vb.pp("word_embeddings"))?;
        let positions = vb.get(
            (config.max_position_embeddings, hidden),
            "position_embeddings.weight",
        )?;
        let segments = vb.get(
            (config.type_vocab_size, hidden),
            "token_type_embeddings.weight",
        )?;
        let segment = segments.get(0)?;
        let norm = candle_nn::layer_norm(hidden, config.layer_norm_eps, vb.pp("LayerNorm"))?;
        Ok(Embeddings {
            words,
            positions,
            segment,
            norm,
        })
    }

    /// `(batch, len)` token ids to `(batch, len, hidden)` vectors.
    fn forward(&self, ids: &Tensor) -> Result<Tensor> {
        let (_, len) = ids.dims2()?;
        // Token i of every text sits at position i: the first `len` rows of the table.
        let positions = self.positions.narrow(0, 0, len)?;
        let summed = self
            .words
            .forward(ids)?
            .broadcast_add(&self.segment)?
            .broadcast_add(&positions)?;
        self.norm.forward(&summed)
    }
}

/// One encoder layer: multi-head self-attention, then a feed-forward block, each followed by a
/// residual connection and a LayerNorm (BERT normalises after the sum, not before).
struct Layer {
    /// Projections of each token vector to its query, key and value.
    query: Linear,
    key: Linear,
    value: Linear,
    /// Mixes the heads' outputs back into one vector per token.
    attention_out: Linear,
    /// Normalises the attention's output plus the layer's input.
    attention_norm: LayerNorm,
    /// The feed-forward block: widen, GELU, narrow.
    intermediate: Linear,
    output: Linear,
    /// Normalises the feed-forward output plus its input.
    output_norm: LayerNorm,
    /// Attention heads.
    heads: usize,
}

impl Layer {
    /// Reads one layer's weights from `vb` (`encoder.layer.{i}.`).
    fn load(vb: VarBuilder, config: &Config) -> Result<Layer> {
        let hidden = config.hidden_size;
        let eps = config.layer_norm_eps;
        let attention = vb.pp("attention");
        let projection =
            |name: &str| candle_nn::linear(hidden, hidden, attention.pp("self").pp(name));
        Ok(Layer {
            query: projection("query")?,
            key: projection("key")?,
            value: projection("value")?,
            attention_out: candle_nn::linear(hidden, hidden, attention.pp("output").pp("dense"))?,
            attention_norm: candle_nn::layer_norm(
                hidden,
                eps,
                attention.pp("output").pp("LayerNorm"),
            )?,
            intermediate: candle_nn::linear(
                hidden,
                config.intermediate_size,
                vb.pp("intermediate").pp("dense"),
            )?,
            output: candle_nn::linear(
                config.intermediate_size,
                hidden,
                vb.pp("output").pp("dense"),
            )?,
            output_norm: candle_nn::layer_norm(hidden, eps, vb.pp("output").pp("LayerNorm"))?,
            heads: config.num_attention_heads,
        })
    }

    /// `(batch, len, hidden)` to the same shape. `mask_bias` is `(batch, 1, 1, len)`: 0 for a
    /// real token, a huge negative number for padding, added to every score that attends to it.
    fn forward(&self, xs: &Tensor, mask_bias: &Tensor) -> Result<Tensor> {
        let (batch, len, hidden) = xs.dims3()?;
        let head_size = hidden / self.heads;
        // (batch, len, hidden) to (batch, heads, len, head_size): each head's slice of the vector.
        let split = |t: Tensor| {
            t.reshape((batch, len, self.heads, head_size))?
                .transpose(1, 2)?
                .contiguous()
        };
        let query = split(self.query.forward(xs)?)?;
        let key = split(self.key.forward(xs)?)?;
        let value = split(self.value.forward(xs)?)?;

        // Scaled dot products, (batch, heads, len, len): how much each token attends to each.
        let scores = (query.matmul(&key.t()?)? / (head_size as f64).sqrt())?;
        let weights = candle_nn::ops::softmax(&scores.broadcast_add(mask_bias)?, D::Minus1)?;
        // Each token's weighted sum of values, the heads put back side by side.
        let attended = weights
            .matmul(&value)?
            .transpose(1, 2)?
            .contiguous()?
            .reshape((batch, len, hidden))?;
        let xs = self
            .attention_norm
            .forward(&(self.attention_out.forward(&attended)? + xs)?)?;

        let widened = Gelu::forward(&self.intermediate.forward(&xs)?)?;
        self.output_norm
            .forward(&(self.output.forward(&widened)? + xs)?)
    }
}

/// The encoder: embeddings, then the layers in order.
pub(super) struct Bert {
    /// The input vectors.
    embeddings: Embeddings,
    /// `num_hidden_layers` layers.
    layers: Vec<Layer>,
}

impl Bert {
    /// Reads the weights from `vb` under Hugging Face's names, with or without the `bert.`
    /// prefix some checkpoints carry. A missing tensor or one of the wrong shape is an error
    /// naming it. Does not check `hidden_act` or `position_embedding_type`: the caller does.
    pub(super) fn load(vb: VarBuilder, config: &Config) -> Result<Bert> {
        let vb = if vb.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vb.pp("bert")
        } else {
            vb
        };
        let embeddings = Embeddings::load(vb.pp("embeddings"), config)?;
        let layers = (0..config.num_hidden_layers)
            .map(|i| Layer::load(vb.pp("encoder.layer").pp(i), config))
            .collect::<Result<Vec<_>>>()?;
        Ok(Bert { embeddings, layers })
    }

    /// `(batch, len)` u32 token ids and a `(batch, len)` u32 mask (1 for a token, 0 for
    /// padding) to `(batch, len, hidden)` f32 token vectors. Padding attends but is never
    /// attended to, so a text's vectors do not depend on the padding after it.
    pub(super) fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (batch, len) = mask.dims2()?;
        // (mask - 1) × f32::MAX: 0 where mask is 1, f32::MIN where it is 0; so that after the
        // softmax's exponential a padded key weighs exactly zero.
        let mask_bias = ((mask.to_dtype(DType::F32)? - 1.0)? * f64::from(f32::MAX))?
            .reshape((batch, 1, 1, len))?;
        let mut xs = self.embeddings.forward(ids)?;
        for layer in &self.layers {
            xs = layer.forward(&xs, &mask_bias)?;
        }
        Ok(xs)
    }
}
