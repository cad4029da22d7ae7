//! Hybrid retrieval: the tools' BM25 hits and their nearest vectors, fused into one ranking
//! (the [module docs](super#hybrid-retrieval) say how, and why that way).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use unicode_segmentation::UnicodeSegmentation;

use crate::bm25::stop_words::is_stop_word_any_case;
use crate::bm25::{Attachment, KeyHit};
use crate::embed::{self, Embedder};

use super::error::SelectError;
use super::hints::with_terms;
use super::policy::HybridPolicy;
use super::turn::Turn;

/// A tool of the fused ranking, with each side's evidence.
#[derive(Debug, Clone, Copy)]
pub(super) struct FusedHit<'a> {
    pub key: &'a Arc<str>,
    /// The row the text index keeps with the tool, when BM25 found it.
    pub attachment: Option<&'a Attachment>,
    pub score: f32,
    pub bm25: Option<f32>,
    pub cosine: Option<f32>,
    /// The lexical side's share of the fused score, the same for every tool of the turn.
    pub lexical_weight: f32,
}

/// The vectors a hybrid turn searches with: the message's, and each ask's when its asks are
/// searched on their own (empty otherwise).
pub(super) struct TurnVectors {
    pub message: Vec<f32>,
    pub asks: Vec<Vec<f32>>,
}

/// The turn's vectors. The message's: the turn's own, if the caller made it (checked for
/// length), else `embedder`'s (checked by `check_shape`) of the message with its hints' terms
/// ([`HintPolicy::embedding_text`](super::HintPolicy::embedding_text)). `own`: the message's
/// own weighted texts, the message first and its hints' terms after.
///
/// `asks`: the weighted texts of each ask the selection searches on its own, as `own`. When
/// there are two or more, the message is no longer than [`GIST_WORDS`] words and the
/// caller made no vector, the asks are embedded, in one call, and the message's vector is
/// their mean: the model reads the message's words once, as today, but one ask at a time.
/// Otherwise no ask gets a vector (they are searched by BM25 alone).
pub(super) fn turn_vectors(
    embedder: &dyn Embedder,
    turn: &Turn,
    own: &[(&str, f32)],
    asks: &[Vec<(&str, f32)>],
) -> Result<TurnVectors, SelectError> {
    let one = |message| TurnVectors {
        message,
        asks: Vec::new(),
    };
    match &turn.query_vector {
        Some(vector) if vector.len() == embedder.dimensions() => Ok(one(vector.to_vec())),
        Some(vector) => Err(SelectError::Embed(embed::EmbedError::Shape {
            expected: format!("a query vector of {} numbers", embedder.dimensions()),
            got: format!("{} numbers", vector.len()),
        })),
        None => {
            let gist = gist(&turn.message);
            if asks.len() >= 2 && gist.is_none() {
                let texts: Vec<Cow<'_, str>> = asks.iter().map(|ask| embedding_text(ask)).collect();
                let texts: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
                let vectors = embedder.embed(&texts)?;
                embed::check_shape(embedder, texts.len(), &vectors)?;
                return Ok(TurnVectors {
                    message: mean(&vectors),
                    asks: vectors,
                });
            }
            let text = with_terms(gist.as_deref().unwrap_or(&turn.message), hint_terms(own));
            let vectors = embedder.embed(&[text.as_ref()])?;
            embed::check_shape(embedder, 1, &vectors)?;
            Ok(one(vectors.into_iter().next().unwrap_or_default()))
        }
    }
}

/// What the embedder reads of weighted texts (a text, then what its hints add): the text with
/// its hints' terms.
fn embedding_text<'t>(texts: &[(&'t str, f32)]) -> Cow<'t, str> {
    match texts.first() {
        Some(&(text, _)) => with_terms(text, hint_terms(texts)),
        None => Cow::Borrowed(""),
    }
}

/// The hints' terms of weighted texts: all but the first, the text itself.
fn hint_terms<'s, 't>(texts: &'s [(&'t str, f32)]) -> impl Iterator<Item = &'t str> + 's {
    texts.iter().skip(1).map(|&(terms, _)| terms)
}

/// The mean of `vectors` (of one length), each taken at unit length first (an embedder need
/// not return unit vectors), scaled to unit length.
fn mean(vectors: &[Vec<f32>]) -> Vec<f32> {
    let unit = |v: &mut [f32]| {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
    };
    let mut sum = vec![0.0f32; vectors.first().map_or(0, Vec::len)];
    for vector in vectors {
        let mut vector = vector.clone();
        unit(&mut vector);
        for (s, x) in sum.iter_mut().zip(&vector) {
            *s += x;
        }
    }
    unit(&mut sum);
    sum
}

/// The most words of a message the embedder reads: a longer message (a task's description of
/// 2,000 characters is about 350 words, past the model's 256-token window) is read as its
/// [`gist`].
pub const GIST_WORDS: usize = 64;

/// What the embedder reads of a message longer than [`GIST_WORDS`] words: its words that are
/// not stop words, in order, the first `GIST_WORDS` of them; `None` for a shorter message,
/// read whole. The model's cost grows with the tokens it reads (MiniLM over its full 256-token
/// window is ~6 GFLOP), and a long message's function words carry little of what it needs:
/// the gist spends the model on the words that name the work, and covers more of the message
/// than the window's first 256 tokens did.
///
/// ```
/// let long = "please could you find the weather in Oslo and then ".repeat(10);
/// let gist = capstore::context::gist(&long).expect("a long message");
/// assert!(gist.starts_with("find weather Oslo find weather Oslo"));
/// assert_eq!(capstore::context::gist("what's the weather in Oslo?"), None);
/// ```
pub fn gist(message: &str) -> Option<String> {
    message.unicode_words().nth(GIST_WORDS)?;
    let content: Vec<&str> = message
        .unicode_words()
        .filter(|w| !is_stop_word_any_case(w))
        .take(GIST_WORDS)
        .collect();
    Some(content.join(" "))
}

/// The best `k` of the fusion of `lexical` (BM25 hits, best first) and `dense` (the
/// `policy.depth` nearest vectors to the message's, best first), best first, ties by key; the
/// message has `words` words.
pub(super) fn fuse<'a>(
    lexical: &[KeyHit<'a>],
    dense: Vec<(&'a Arc<str>, f32)>,
    words: usize,
    policy: &HybridPolicy,
    k: usize,
) -> Vec<FusedHit<'a>> {
    let lexical = lexical
        .get(..policy.depth.min(lexical.len()))
        .unwrap_or_default();
    let best_bm25 = lexical.first().map_or(0.0, |h| h.score);
    let (best_cos, floor) = match (dense.first(), dense.last()) {
        (Some(&(_, best)), Some(&(_, last))) => (best, last),
        _ => (0.0, 0.0),
    };
    let separation = dense.get(1).map_or(0.0, |&(_, second)| best_cos - second);
    let w = lexical_weight(policy, words, best_bm25, separation);
    let mut fused: Vec<FusedHit<'a>> = Vec::with_capacity(lexical.len() + dense.len());
    let mut at: HashMap<&str, usize> = HashMap::with_capacity(fused.capacity());
    for hit in lexical {
        at.insert(hit.key, fused.len());
        fused.push(FusedHit {
            key: hit.key,
            attachment: hit.attachment,
            score: w * relative(hit.score, 0.0, best_bm25),
            bm25: Some(hit.score),
            cosine: None,
            lexical_weight: w,
        });
    }
    for (key, cosine) in dense {
        let share = (1.0 - w) * relative(cosine, floor, best_cos);
        match at.get(&**key) {
            Some(&i) => {
                if let Some(hit) = fused.get_mut(i) {
                    hit.score += share;
                    hit.cosine = Some(cosine);
                }
            }
            None => fused.push(FusedHit {
                key,
                attachment: None,
                score: share,
                bm25: None,
                cosine: Some(cosine),
                lexical_weight: w,
            }),
        }
    }
    fused.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.key.cmp(b.key)));
    fused.truncate(k);
    fused
}

/// The lexical side's share of a message of `words` words whose best BM25 score is
/// `best_bm25` and whose nearest tool vector stands `separation` above the second
/// ([`HybridPolicy::lexical_weight`]). A message longer than [`GIST_WORDS`] words was embedded by
/// its [`gist`], at most `GIST_WORDS` of its words from its start, and BM25 read all of it: the
/// lexical side takes its largest share, `max_lexical_weight`. (Its BM25 score per word is low
/// only because it is long: a task's description of 300 words otherwise went to the vector
/// of its first lines at 0.2.)
fn lexical_weight(policy: &HybridPolicy, words: usize, best_bm25: f32, separation: f32) -> f32 {
    if words > GIST_WORDS {
        return policy.max_lexical_weight;
    }
    policy.lexical_weight(best_bm25 / words.max(1) as f32, separation)
}

/// Where `score` stands between `floor` (0) and `best` (1); 1 when they are equal.
fn relative(score: f32, floor: f32, best: f32) -> f32 {
    if best > floor {
        ((score - floor) / (best - floor)).clamp(0.0, 1.0)
    } else {
        1.0
    }
}
