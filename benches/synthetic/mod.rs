//! A deterministic synthetic tool-like corpus, shared by the benches (`mod synthetic;`).
//!
//! - Vocabulary of [`CorpusSpec::vocab_size`] words ranked by frequency: the first ranks are
//!   English function words ("the", "to", "a", ...), the next ones common tool words ("get",
//!   "list", "file", ...), the rest made of syllables ("kalo", "mirutesa", ...). Real tool text
//!   looks like this: a few function words carry most of the postings.
//! - Tokens are drawn from a Zipf distribution over the ranks (P(rank r) ∝ 1 / r^s, s = 1.0 by
//!   default), for documents (10–100 tokens, uniform) and queries (5–40 tokens, uniform) alike, so
//!   queries contain common words too. Corpora are already tokens: no tokenizer, no stop-word
//!   filter; every contender indexes the same token lists.
//! - Everything comes from a fixed-seed SplitMix64, no `rand` crate: the same spec gives the same
//!   corpus on every machine. Documents come from one stream and queries from another, so the
//!   documents of a smaller corpus are a prefix of a larger one's and the queries are the same at
//!   every size.
//!
//! Documents are stored as word ids (4 bytes a token), so a 100,000-document corpus costs ~22 MB;
//! [`Corpus::doc_tokens`] materialises one document's tokens as strings when needed.

// Each bench uses the part it needs.
#![allow(dead_code)]

/// SplitMix64 (Steele, Lea & Flood 2014): tiny, fast, and good enough for benchmark data.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A number in `0..n`, by remainder (the usage and memory benches draw with it).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `lo..=hi` (multiply-shift; the bias is below 2^-32 for these small ranges).
    pub fn range_inclusive(&mut self, lo: usize, hi: usize) -> usize {
        assert!(lo <= hi);
        let span = (hi - lo + 1) as u64;
        lo + ((u128::from(self.next_u64()) * u128::from(span)) >> 64) as usize
    }
}

/// Zipf distribution over ranks `0..n`: P(rank r) ∝ 1 / (r + 1)^s, sampled by inverting the CDF.
#[derive(Clone, Debug)]
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    pub fn new(n: usize, s: f64) -> Self {
        assert!(n > 0);
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (1..=n)
            .map(|r| {
                acc += (r as f64).powf(-s);
                acc
            })
            .collect();
        for c in &mut cdf {
            *c /= acc;
        }
        Self { cdf }
    }

    pub fn sample(&self, rng: &mut SplitMix64) -> usize {
        let u = rng.next_f64();
        self.cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1)
    }

    /// Probability of `rank`.
    pub fn p(&self, rank: usize) -> f64 {
        self.cdf[rank] - if rank == 0 { 0.0 } else { self.cdf[rank - 1] }
    }
}

/// The shape of a synthetic corpus. [`CorpusSpec::tool_like`] is the one the benches use.
#[derive(Clone, Debug)]
pub struct CorpusSpec {
    pub n_docs: usize,
    pub vocab_size: usize,
    /// Zipf exponent.
    pub zipf_s: f64,
    /// Document length in tokens, inclusive range.
    pub doc_len: (usize, usize),
    pub n_queries: usize,
    /// Query length in tokens, inclusive range.
    pub query_len: (usize, usize),
    pub seed: u64,
}

impl CorpusSpec {
    /// 30,000-word vocabulary, s = 1.0, 10–100 tokens a document, 1,000 queries of 5–40 tokens.
    pub fn tool_like(n_docs: usize) -> Self {
        Self {
            n_docs,
            vocab_size: 30_000,
            zipf_s: 1.0,
            doc_len: (10, 100),
            n_queries: 1_000,
            query_len: (5, 40),
            seed: 0x00C4_9570_4E00_0001,
        }
    }
}

/// Function words, most frequent first: ranks 0.. of the vocabulary.
const FUNCTION_WORDS: &[&str] = &[
    "the", "to", "a", "of", "and", "for", "in", "is", "or", "with", "by", "on", "an", "this",
    "from", "be", "that", "as", "it", "if", "are", "at", "not", "can", "will", "which", "all",
    "its", "no", "when", "you", "your", "use", "used", "one", "any", "into", "each", "given",
    "should", "must", "may", "only", "more", "than", "other", "such", "their", "also", "has",
    "have", "was", "but", "there", "these", "then", "been", "how", "what", "out",
];

/// Common tool words: the ranks after the function words.
const TOOL_WORDS: &[&str] = &[
    "get",
    "list",
    "file",
    "name",
    "id",
    "search",
    "create",
    "update",
    "delete",
    "user",
    "data",
    "string",
    "query",
    "type",
    "value",
    "set",
    "path",
    "url",
    "date",
    "time",
    "number",
    "api",
    "result",
    "results",
    "return",
    "returns",
    "information",
    "details",
    "send",
    "message",
    "email",
    "text",
    "code",
    "status",
    "account",
    "project",
    "repository",
    "issue",
    "page",
    "content",
    "location",
    "weather",
    "city",
    "price",
    "order",
    "calendar",
    "event",
    "image",
    "document",
    "report",
    "format",
    "limit",
    "offset",
    "key",
    "token",
    "request",
    "response",
    "default",
    "optional",
    "required",
    "array",
    "object",
    "boolean",
    "integer",
    "count",
    "total",
    "start",
    "end",
    "range",
    "filter",
    "sort",
    "field",
    "fields",
    "record",
    "records",
    "table",
    "database",
    "server",
    "client",
    "service",
    "resource",
    "version",
    "language",
    "country",
    "currency",
    "amount",
    "payment",
    "customer",
    "product",
    "item",
    "items",
    "description",
    "title",
    "label",
    "tag",
    "tags",
    "category",
    "address",
    "phone",
    "contact",
    "team",
    "member",
];

const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ru", "te", "sa", "no", "pe", "di", "fu", "ga", "ho", "ji", "ke", "la", "mo",
    "ni", "po", "re", "si", "tu", "va", "we", "zo", "ba", "ce", "de", "fi",
];

/// The word at `rank`: function words, then tool words, then unique syllable words.
fn make_vocab(size: usize) -> Vec<String> {
    let mut vocab: Vec<String> = FUNCTION_WORDS
        .iter()
        .chain(TOOL_WORDS)
        .take(size)
        .map(|w| (*w).to_owned())
        .collect();
    let mut seen: std::collections::HashSet<String> = vocab.iter().cloned().collect();
    // Syllable words: the base-28 digits of j (at least two), each digit a syllable. Fixed-width
    // syllables make distinct j give distinct strings; the set guards against real words.
    let base = SYLLABLES.len();
    let mut j = base;
    while vocab.len() < size {
        let mut word = String::new();
        let mut x = j;
        while x > 0 {
            word.push_str(SYLLABLES[x % base]);
            x /= base;
        }
        j += 1;
        if seen.insert(word.clone()) {
            vocab.push(word);
        }
    }
    vocab
}

/// A generated corpus: vocabulary, documents as word ids, and queries as token strings.
#[derive(Clone, Debug)]
pub struct Corpus {
    pub spec: CorpusSpec,
    pub vocab: Vec<String>,
    /// `docs[i]` is document `i`'s tokens as indexes into `vocab`.
    pub docs: Vec<Vec<u32>>,
    pub queries: Vec<Vec<String>>,
    zipf: Zipf,
    doc_rng: SplitMix64,
}

impl Corpus {
    pub fn generate(spec: CorpusSpec) -> Self {
        let vocab = make_vocab(spec.vocab_size);
        let zipf = Zipf::new(spec.vocab_size, spec.zipf_s);
        let mut query_rng = SplitMix64::new(spec.seed ^ 0x5155_4552_5953_0000);
        let queries = (0..spec.n_queries)
            .map(|_| {
                let len = query_rng.range_inclusive(spec.query_len.0, spec.query_len.1);
                (0..len)
                    .map(|_| vocab[zipf.sample(&mut query_rng)].clone())
                    .collect()
            })
            .collect();
        let mut corpus = Self {
            vocab,
            docs: Vec::new(),
            queries,
            zipf,
            doc_rng: SplitMix64::new(spec.seed),
            spec,
        };
        let mut rng = corpus.doc_rng.clone();
        corpus.docs = (0..corpus.spec.n_docs)
            .map(|_| corpus.next_doc_ids(&mut rng))
            .collect();
        corpus.doc_rng = rng;
        corpus
    }

    fn next_doc_ids(&self, rng: &mut SplitMix64) -> Vec<u32> {
        let (lo, hi) = self.spec.doc_len;
        let len = rng.range_inclusive(lo, hi);
        (0..len).map(|_| self.zipf.sample(rng) as u32).collect()
    }

    /// `n` more documents from the same distribution, continuing the document stream (documents
    /// `n_docs..n_docs + n`, not part of `docs`): new tools to insert into a built index.
    pub fn extra_docs(&self, n: usize) -> Vec<Vec<u32>> {
        let mut rng = self.doc_rng.clone();
        (0..n).map(|_| self.next_doc_ids(&mut rng)).collect()
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// The key of document `i`: `tool-000123`. Zero-padded, so key order is document order.
    pub fn key(i: usize) -> String {
        format!("tool-{i:06}")
    }

    /// Word ids as token strings.
    pub fn tokens(&self, ids: &[u32]) -> Vec<String> {
        ids.iter()
            .map(|&w| self.vocab[w as usize].clone())
            .collect()
    }

    /// Document `i`'s tokens as strings.
    pub fn doc_tokens(&self, i: usize) -> Vec<String> {
        self.tokens(&self.docs[i])
    }

    /// Bytes of token text in the corpus (the sum of token lengths, no per-string overhead).
    pub fn token_text_bytes(&self) -> usize {
        self.docs
            .iter()
            .flatten()
            .map(|&w| self.vocab[w as usize].len())
            .sum()
    }

    pub fn total_tokens(&self) -> usize {
        self.docs.iter().map(Vec::len).sum()
    }
}
