//! Synthetic catalogs of any size, the same on every machine, to measure loading at scale
//! (`capstore gen-catalog`, hidden from the help and documented in BENCHMARKS.md, writes
//! them). Not part of the stable API.
//!
//! [`write_catalog`] writes a `capstore.catalog/v1` document: ⌈tools / tools_per_skill⌉
//! skills (name, description, category, tags) bundling `tools_per_skill` tools each (the last
//! one the remainder). Each tool has a name (`verb_noun`, numbered when a skill repeats one),
//! a source (its skill's name), a description of 15 to 40 words, one to three tags and an
//! object input schema of one to five typed properties (one or two for most), each with a short description, and a
//! `required` list.
//!
//! Words are drawn from a Zipf distribution (P(rank r) ∝ 1 / r) over a vocabulary ranked like
//! real tool text: English function words first, then common tool words, then made-up words of
//! two to four syllables, so a few words carry most of the postings and the long tail gives
//! the index many rare terms. Everything comes from a fixed-seed SplitMix64 (no `rand`
//! crate): the same spec gives the same bytes on every machine.
//!
//! ```
//! use capstore::catalog::Catalog;
//! use capstore::catalog::synthetic::{Spec, write_catalog};
//! let spec = Spec { tools: 250, tools_per_skill: 100, seed: 7 };
//! let mut json = Vec::new();
//! write_catalog(&spec, &mut json)?;
//! let catalog = Catalog::from_json_str(std::str::from_utf8(&json)?)?;
//! assert_eq!(catalog.skills.len(), 3);
//! assert_eq!(catalog.skills[2].tools.len(), 50);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::Write;

use serde_json::{Value, json};

/// English function words, the most frequent ranks.
const ENGLISH: &[&str] = &[
    "the", "a", "to", "of", "and", "for", "in", "or", "with", "from", "by", "on", "is", "as", "an",
    "that", "this", "it", "be", "are", "at", "all", "one", "each", "its", "if", "not", "new",
    "when", "into", "given", "only", "any", "more", "than", "can", "will", "which",
];

/// Tool words, after the function words; also the nouns of tool names and properties.
const TOOL_WORDS: &[&str] = &[
    "file",
    "files",
    "user",
    "users",
    "repository",
    "issue",
    "issues",
    "pull",
    "request",
    "branch",
    "commit",
    "message",
    "messages",
    "channel",
    "search",
    "query",
    "results",
    "page",
    "pages",
    "event",
    "events",
    "calendar",
    "meeting",
    "email",
    "document",
    "documents",
    "folder",
    "directory",
    "path",
    "name",
    "id",
    "status",
    "content",
    "text",
    "data",
    "table",
    "row",
    "rows",
    "record",
    "records",
    "database",
    "schema",
    "index",
    "key",
    "value",
    "values",
    "config",
    "settings",
    "project",
    "task",
    "tasks",
    "ticket",
    "comment",
    "comments",
    "label",
    "labels",
    "team",
    "member",
    "members",
    "account",
    "invoice",
    "payment",
    "order",
    "orders",
    "product",
    "price",
    "customer",
    "contact",
    "contacts",
    "image",
    "video",
    "audio",
    "url",
    "link",
    "web",
    "log",
    "logs",
    "metric",
    "metrics",
    "alert",
    "alerts",
    "service",
    "server",
    "cluster",
    "container",
    "job",
    "workflow",
    "pipeline",
    "report",
    "summary",
    "weather",
    "city",
    "location",
    "map",
    "route",
    "time",
    "date",
    "range",
    "limit",
    "filter",
    "format",
    "json",
    "csv",
    "api",
    "token",
    "permission",
    "role",
    "group",
    "returns",
    "using",
    "list",
    "current",
    "optional",
    "default",
    "number",
];

/// The verbs of tool names.
const VERBS: &[&str] = &[
    "get",
    "list",
    "create",
    "update",
    "delete",
    "search",
    "fetch",
    "send",
    "read",
    "write",
    "run",
    "start",
    "stop",
    "deploy",
    "build",
    "check",
    "find",
    "add",
    "remove",
    "set",
    "share",
    "copy",
    "move",
    "rename",
    "archive",
    "restore",
    "sync",
    "export",
    "import",
    "translate",
    "convert",
    "analyze",
    "generate",
    "schedule",
    "notify",
    "subscribe",
];

/// Syllables of the made-up words of the vocabulary's tail.
const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ru", "te", "sa", "no", "vi", "pe", "da", "zu", "ri", "ko", "ma", "ne", "ti",
    "bo", "la", "fe", "gu", "shi", "ton", "ar", "el",
];

const CATEGORIES: &[&str] = &[
    "code",
    "communication",
    "data",
    "devops",
    "documents",
    "finance",
    "media",
    "productivity",
    "research",
    "sales",
    "security",
    "travel",
];

const TYPES: &[&str] = &[
    "string", "string", "string", "integer", "boolean", "number", "array",
];

/// Words in the vocabulary: the named ones and made-up ones after them.
const VOCABULARY: usize = 20_000;

/// SplitMix64 (Steele, Lea & Flood 2014): tiny, fast, and good enough for synthetic data.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), 53 random bits.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        let span = (hi - lo + 1) as u64;
        lo + ((u128::from(self.next_u64()) * u128::from(span)) >> 64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.range(0, items.len() - 1)]
    }
}

/// The vocabulary, ranked, with the Zipf distribution's cumulative weights.
struct Words {
    words: Vec<String>,
    cdf: Vec<f64>,
}

impl Words {
    fn new() -> Self {
        let mut words: Vec<String> = ENGLISH
            .iter()
            .chain(TOOL_WORDS)
            .map(|w| (*w).to_string())
            .collect();
        let base = SYLLABLES.len();
        let mut n = 0usize;
        while words.len() < VOCABULARY {
            // Two syllables for the first base² words, then three, then four; the fastest
            // changing syllable first, so that neighbouring ranks do not share a prefix.
            let (mut rest, syllables) = if n < base * base {
                (n, 2)
            } else if n < base * base * (base + 1) {
                (n - base * base, 3)
            } else {
                (n - base * base * (base + 1), 4)
            };
            let mut word = String::new();
            for _ in 0..syllables {
                word.push_str(SYLLABLES[rest % base]);
                rest /= base;
            }
            words.push(word);
            n += 1;
        }
        let mut total = 0.0;
        let mut cdf: Vec<f64> = (1..=words.len())
            .map(|rank| {
                total += 1.0 / rank as f64;
                total
            })
            .collect();
        for c in &mut cdf {
            *c /= total;
        }
        Words { words, cdf }
    }

    fn draw(&self, rng: &mut SplitMix64) -> &str {
        let u = rng.next_f64();
        let rank = self
            .cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1);
        &self.words[rank]
    }

    /// A sentence of `lo..=hi` words, capitalised, with a full stop.
    fn sentence(&self, rng: &mut SplitMix64, lo: usize, hi: usize) -> String {
        let n = rng.range(lo, hi);
        let mut text = String::new();
        for i in 0..n {
            let word = self.draw(rng);
            if i == 0 {
                let mut chars = word.chars();
                if let Some(first) = chars.next() {
                    text.extend(first.to_uppercase());
                    text.push_str(chars.as_str());
                }
            } else {
                text.push(' ');
                text.push_str(word);
            }
        }
        text.push('.');
        text
    }
}

/// What to generate.
///
/// ```
/// let spec = capstore::catalog::synthetic::Spec::default();
/// assert_eq!((spec.tools_per_skill, spec.seed), (100, 1));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// How many tools in all.
    pub tools: usize,
    /// How many tools each skill bundles (at least 1; the last skill takes the remainder).
    pub tools_per_skill: usize,
    /// The random stream's seed.
    pub seed: u64,
}

impl Default for Spec {
    /// 1,000 tools, 100 a skill, seed 1.
    fn default() -> Self {
        Spec {
            tools: 1000,
            tools_per_skill: 100,
            seed: 1,
        }
    }
}

/// Writes the catalog `spec` describes to `out`, one skill at a time (a million tools never
/// sit in memory at once). A `tools_per_skill` of 0 counts as 1.
///
/// ```
/// use capstore::catalog::synthetic::{Spec, write_catalog};
/// let (mut a, mut b) = (Vec::new(), Vec::new());
/// write_catalog(&Spec { tools: 10, ..Spec::default() }, &mut a)?;
/// write_catalog(&Spec { tools: 10, ..Spec::default() }, &mut b)?;
/// assert_eq!(a, b);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_catalog(spec: &Spec, out: &mut impl Write) -> std::io::Result<()> {
    let words = Words::new();
    let mut rng = SplitMix64(spec.seed);
    out.write_all(b"{\"format\":\"capstore.catalog/v1\",\"skills\":[")?;
    let per_skill = spec.tools_per_skill.max(1);
    let skills = spec.tools.div_ceil(per_skill);
    for s in 0..skills {
        if s > 0 {
            out.write_all(b",\n")?;
        }
        let count = per_skill.min(spec.tools - s * per_skill);
        let skill = skill(&words, &mut rng, s, count);
        serde_json::to_writer(&mut *out, &skill)?;
    }
    out.write_all(b"]}\n")
}

fn skill(words: &Words, rng: &mut SplitMix64, index: usize, tools: usize) -> Value {
    let name = format!("{}-{}-{index}", rng.pick(TOOL_WORDS), words.draw(rng));
    let mut names = std::collections::HashSet::new();
    let tools: Vec<Value> = (0..tools)
        .map(|_| {
            let mut tool_name = format!("{}_{}", rng.pick(VERBS), rng.pick(TOOL_WORDS));
            if !names.insert(tool_name.clone()) {
                let mut n = 2;
                while !names.insert(format!("{tool_name}_{n}")) {
                    n += 1;
                }
                tool_name = format!("{tool_name}_{n}");
            }
            tool(words, rng, &name, tool_name)
        })
        .collect();
    json!({
        "name": name,
        "description": words.sentence(rng, 8, 20),
        "category": rng.pick(CATEGORIES),
        "tags": tags(rng, 1, 3),
        "tools": tools,
    })
}

fn tool(words: &Words, rng: &mut SplitMix64, source: &str, name: String) -> Value {
    let description = words.sentence(rng, 15, 40);
    let tags = tags(rng, 1, 3);
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    // One to five, most tools taking one or two (as real tools do).
    let count = 1 + (4.0 * rng.next_f64() * rng.next_f64()) as usize;
    for k in 0..count {
        let mut property = rng.pick(TOOL_WORDS).to_string();
        if properties.contains_key(&property) {
            property = format!("{property}_{k}");
        }
        let kind = rng.pick(TYPES);
        let mut schema = json!({"type": kind, "description": words.sentence(rng, 2, 6)});
        if kind == "array" {
            schema["items"] = json!({"type": "string"});
        }
        if k == 0 || rng.range(0, 2) == 0 {
            required.push(property.clone());
        }
        properties.insert(property, schema);
    }
    json!({
        "name": name,
        "source": source,
        "description": description,
        "tags": tags,
        "input_schema": {"type": "object", "properties": properties, "required": required},
    })
}

/// `lo..=hi` distinct tags from the tool words.
fn tags(rng: &mut SplitMix64, lo: usize, hi: usize) -> Vec<&'static str> {
    let mut tags: Vec<&str> = Vec::new();
    for _ in 0..rng.range(lo, hi) {
        let tag = rng.pick(TOOL_WORDS);
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    tags
}
