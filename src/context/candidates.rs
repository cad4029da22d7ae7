//! The candidates of one selection, gathered from every source before the policy ranks them.
//!
//! Everything here borrows from the snapshot, the policy and the turn: a candidate costs no key
//! copy, no shared-pointer bump and no reason strings. A skill brings dozens of candidates a
//! turn of which a dozen reach the [`Selection`](super::Selection); only those are turned into
//! [`SelectedTool`](super::SelectedTool)s and [`Dropped`](super::Dropped) entries, with their
//! [`Reason`]s, and only then.

use std::cell::{Cell, OnceCell};
use std::sync::Arc;

use crate::bm25::index::QueryExplainer;
use crate::bm25::{
    Attachment, Bm25Index, Explanation, KeyHit, best_first_key, put_back, take_from,
};
use crate::store::{Entry, RowLookup, Snapshot, StoreError};
use crate::tools::{TOOLS, Tool};

use super::key_table::{KeyTable, Probe};
use super::selection::{Reason, Reasons};

/// Candidates are ranked first by class (a pinned tool before a named one before a retrieved
/// one ...), then by score within the class.
pub(super) mod class {
    pub const PINNED: u8 = 0;
    pub const EXACT: u8 = 1;
    pub const DISCOVERED: u8 = 2;
    pub const RELEVANT: u8 = 3;
    pub const RECENT: u8 = 4;
    pub const FALLBACK: u8 = 5;
}

/// How much a tool's own BM25 relevance adds to the score it got another way. All the tools of
/// a matched skill share one score; without this, a skill's unrelated tools (`delete_event`
/// for "book a flight and put it in my calendar") tied with, and by key order beat, the tools
/// whose own text matched (`search_flights`). Small, so that it orders within a score level
/// rather than across levels.
const RETRIEVAL_TIE_BREAK: f32 = 0.1;

/// What a tool's own relative BM25 score `relative` adds to the score it ranks by.
#[inline]
fn retrieval_bonus(relative: f32) -> f32 {
    RETRIEVAL_TIE_BREAK * relative
}

/// A [`Reason`] with its text borrowed, made into a `Reason` only for the tools that reach the
/// selection ([`Why::reason`]).
#[derive(Debug, Clone, Copy)]
pub(super) enum Why<'a> {
    Pinned,
    PinnedSkill {
        skill: &'a Arc<str>,
    },
    ExactName {
        mention: &'a str,
    },
    Discovered,
    /// The explanation, if the policy asks for one, is computed when the reason is made.
    Retrieved {
        score: f32,
    },
    Hybrid {
        score: f32,
        bm25: Option<f32>,
        cosine: Option<f32>,
        lexical_weight: f32,
    },
    Skill {
        skill: &'a Arc<str>,
        score: f32,
    },
    DependencyOf {
        skill: &'a Arc<str>,
        dependency: &'a Arc<str>,
    },
    RecentlyUsed,
    Fallback,
}

/// The per-term explanations of retrieved tools, when the policy asks for them. The query is
/// prepared against the index once, at the first explanation, for all of them.
pub(super) struct Explainer<'q> {
    /// The tools' text index, or `None` when the policy does not explain.
    index: Option<&'q Bm25Index>,
    query: &'q [(&'q str, f32)],
    prepared: OnceCell<QueryExplainer<'q, 'q>>,
}

impl<'q> Explainer<'q> {
    /// Explains `query`'s scores over `index`; explains nothing without one.
    pub fn new(index: Option<&'q Bm25Index>, query: &'q [(&'q str, f32)]) -> Self {
        Explainer {
            index,
            query,
            prepared: OnceCell::new(),
        }
    }

    /// Whether it explains (the policy asks for explanations).
    pub fn explains(&self) -> bool {
        self.index.is_some()
    }

    /// `Reason::Retrieved` of the tool `key` with BM25 score `score`.
    #[inline(always)]
    pub fn retrieved(&self, key: &str, score: f32) -> Reason {
        Reason::Retrieved {
            score,
            explanation: self.explain(key),
        }
    }

    pub fn explain(&self, key: &str) -> Option<Box<Explanation>> {
        let index = self.index?;
        let prepared = self
            .prepared
            .get_or_init(|| index.query_explainer(self.query));
        prepared.explain(key).map(Box::new)
    }
}

impl Why<'_> {
    /// The public reason, for the tool `key`.
    #[inline(always)]
    pub fn reason(self, key: &str, explainer: &Explainer<'_>) -> Reason {
        match self {
            Why::Pinned => Reason::Pinned,
            Why::PinnedSkill { skill } => Reason::PinnedSkill {
                skill: Arc::clone(skill),
            },
            Why::ExactName { mention } => Reason::ExactName {
                mention: mention.to_string(),
            },
            Why::Discovered => Reason::Discovered,
            Why::Retrieved { score } => explainer.retrieved(key, score),
            Why::Hybrid {
                score,
                bm25,
                cosine,
                lexical_weight,
            } => Reason::Hybrid {
                score,
                bm25,
                cosine,
                lexical_weight,
                explanation: bm25.and_then(|_| explainer.explain(key)),
            },
            Why::Skill { skill, score } => Reason::Skill {
                skill: Arc::clone(skill),
                score,
            },
            Why::DependencyOf { skill, dependency } => Reason::DependencyOf {
                skill: Arc::clone(skill),
                dependency: Arc::clone(dependency),
            },
            Why::RecentlyUsed => Reason::RecentlyUsed,
            Why::Fallback => Reason::Fallback,
        }
    }
}

/// A tool found one or more ways.
pub(super) struct Candidate<'a> {
    pub key: &'a str,
    /// The tool, once looked up: a matched skill lists dozens of tools, and only those that
    /// can reach the selection are looked up ([`Candidates::ranked`]).
    found: Found<'a>,
    pub class: u8,
    score: f32,
    /// [`RETRIEVAL_TIE_BREAK`] times the tool's own relative BM25 score, if it was retrieved.
    bonus: f32,
    /// The strongest reason; `second` and then `more` hold the others, in the order found.
    /// Most candidates have one or two reasons (a skill's tool also retrieved): they cost no
    /// allocation.
    first: Why<'a>,
    second: Option<Why<'a>>,
    more: Vec<Why<'a>>,
}

/// Whether a candidate's tool is in the snapshot.
#[derive(Clone, Copy)]
enum Found<'a> {
    NotLooked,
    /// In the snapshot (its text index retrieved it, under this stored key), not looked up:
    /// only the tools that are sent need their records, not the near misses. With the row the
    /// index keeps with the tool's document (the store's tables always give it one), which is
    /// the tool's row in the snapshot: the record needs no look-up either.
    Indexed(&'a Arc<str>, Option<&'a Attachment>),
    Yes(Entry<'a, Tool>),
    No,
}

impl<'a> Candidate<'a> {
    fn bonus_of(why: &Why<'_>, score: f32) -> f32 {
        if matches!(why, Why::Retrieved { .. } | Why::Hybrid { .. }) {
            retrieval_bonus(score)
        } else {
            0.0
        }
    }

    fn new(key: &'a str, found: Found<'a>, class: u8, score: f32, why: Why<'a>) -> Self {
        Candidate {
            key,
            found,
            class,
            score,
            bonus: Candidate::bonus_of(&why, score),
            first: why,
            second: None,
            more: Vec::new(),
        }
    }

    /// Another way the tool was found: it keeps its best class and all its reasons.
    fn merge(&mut self, class: u8, score: f32, why: Why<'a>) {
        self.bonus = self.bonus.max(Self::bonus_of(&why, score));
        if class < self.class || (class == self.class && score > self.score) {
            self.class = class;
            self.score = score;
            let weaker = std::mem::replace(&mut self.first, why);
            // `weaker` goes first among the others.
            if let Some(next) = self.second.replace(weaker) {
                self.more.insert(0, next);
            }
        } else if self.second.is_none() {
            self.second = Some(why);
        } else {
            self.more.push(why);
        }
    }

    /// The score it ranks by: the bonus only orders relevant tools (pinned and named tools keep
    /// their own order).
    pub fn rank_score(&self) -> f32 {
        if self.class == class::RELEVANT {
            self.score + self.bonus
        } else {
            self.score
        }
    }

    /// Its tool, looked up now if it was not before.
    pub fn entry(&self, tools: RowLookup<'a, Tool>) -> Option<Entry<'a, Tool>> {
        match self.found {
            Found::Yes(entry) => Some(entry),
            Found::No => None,
            Found::Indexed(key, row) => indexed_entry(key, row, tools),
            Found::NotLooked => tools.entry(self.key),
        }
    }

    /// Its key as stored (shared, not copied) when the store or the index handed it out;
    /// copied otherwise.
    pub fn shared_key(&self) -> Arc<str> {
        match self.found {
            Found::Yes(entry) => Arc::clone(entry.key),
            Found::Indexed(key, _) => Arc::clone(key),
            Found::NotLooked | Found::No => Arc::from(self.key),
        }
    }

    /// Its reasons, strongest first.
    #[inline(always)]
    pub fn reasons(&self, explainer: &Explainer<'_>) -> Reasons {
        if let (Why::Retrieved { score }, None) = (self.first, self.second) {
            return retrieved_reasons(self.key, score, explainer);
        }
        self.reasons_general(explainer)
    }

    fn reasons_general(&self, explainer: &Explainer<'_>) -> Reasons {
        let key = self.key;
        let first = self.first.reason(key, explainer);
        let Some(second) = self.second else {
            // One reason: most candidates.
            return Reasons::one(first);
        };
        let second = second.reason(key, explainer);
        if self.more.is_empty() {
            return Reasons::two(first, second);
        }
        let mut reasons = Vec::with_capacity(2 + self.more.len());
        reasons.push(first);
        reasons.push(second);
        reasons.extend(self.more.iter().map(|why| why.reason(key, explainer)));
        Reasons::from(reasons)
    }
}

/// The reasons of a tool `key` retrieved with BM25 score `score`, and found no other way.
#[inline(always)]
fn retrieved_reasons(key: &str, score: f32, explainer: &Explainer<'_>) -> Reasons {
    // Without an explanation (the common case), inlined and made in one piece, so that it is
    // written where the caller keeps it: built in a call and copied out, it was written a
    // field at a time and read back 16 bytes at a time, loads that waited for the stores to
    // retire (45% of `Candidate::reasons`' time under `perf`).
    if !explainer.explains() {
        return Reasons::one(Reason::Retrieved {
            score,
            explanation: None,
        });
    }
    Reasons::one(explainer.retrieved(key, score))
}

/// What filling a selection asks of a candidate, taken in rank order: a gathered
/// [`Candidate`], or a [`RetrievedOnly`] hit.
pub(super) trait Offered<'a> {
    /// Whether the tool is pinned (it gets in whatever the limits).
    fn is_pinned(&self) -> bool;
    /// Its tool, looked up now if it was not before.
    fn entry(&self, tools: RowLookup<'a, Tool>) -> Option<Entry<'a, Tool>>;
    /// Its key as stored.
    fn shared_key(&self) -> Arc<str>;
    /// The score it ranks by.
    fn rank_score(&self) -> f32;
    /// Its reasons, strongest first.
    fn reasons(&self, explainer: &Explainer<'_>) -> Reasons;
}

impl<'a> Offered<'a> for &Candidate<'a> {
    #[inline(always)]
    fn is_pinned(&self) -> bool {
        self.class == class::PINNED
    }
    #[inline(always)]
    fn entry(&self, tools: RowLookup<'a, Tool>) -> Option<Entry<'a, Tool>> {
        Candidate::entry(self, tools)
    }
    #[inline(always)]
    fn shared_key(&self) -> Arc<str> {
        Candidate::shared_key(self)
    }
    #[inline(always)]
    fn rank_score(&self) -> f32 {
        Candidate::rank_score(self)
    }
    #[inline(always)]
    fn reasons(&self, explainer: &Explainer<'_>) -> Reasons {
        Candidate::reasons(self, explainer)
    }
}

/// A tool the tools' search retrieved, in a selection whose only candidates are that search's
/// hits (no pinned, named, discovered, skill, recent or kept tools): what its [`Candidate`]
/// would say (relevant, in the snapshot, retrieved and nothing else), without gathering the
/// candidates, recording them and ranking them, which was a fifteenth of a MetaTool selection.
/// Made by [`retrieved_only`].
#[derive(Clone, Copy)]
pub(super) struct RetrievedOnly<'a> {
    key: &'a Arc<str>,
    attachment: Option<&'a Attachment>,
    /// Its score relative to the best hit's.
    relative: f32,
    /// Its BM25 score.
    score: f32,
}

impl<'a> Offered<'a> for RetrievedOnly<'a> {
    #[inline(always)]
    fn is_pinned(&self) -> bool {
        false
    }
    #[inline(always)]
    fn entry(&self, tools: RowLookup<'a, Tool>) -> Option<Entry<'a, Tool>> {
        indexed_entry(self.key, self.attachment, tools)
    }
    #[inline(always)]
    fn shared_key(&self) -> Arc<str> {
        Arc::clone(self.key)
    }
    #[inline(always)]
    fn rank_score(&self) -> f32 {
        // As a relevant candidate's: its score plus its bonus.
        self.relative + retrieval_bonus(self.relative)
    }
    #[inline(always)]
    fn reasons(&self, explainer: &Explainer<'_>) -> Reasons {
        retrieved_reasons(self.key, self.score, explainer)
    }
}

/// The entry of a tool the text index retrieved under `key`: from `row`, the row the index
/// keeps with its document (the tool's row in the snapshot), or looked up if it has none.
#[inline(always)]
fn indexed_entry<'a>(
    key: &'a Arc<str>,
    row: Option<&'a Attachment>,
    tools: RowLookup<'a, Tool>,
) -> Option<Entry<'a, Tool>> {
    match row {
        Some(row) => Entry::of_row(key, row),
        None => tools.entry(key),
    }
}

/// A hit's score relative to the best hit's `best` (0 when the best is not positive).
#[inline]
pub(super) fn relative_score(score: f32, best: f32) -> f32 {
    if best > 0.0 { score / best } else { 0.0 }
}

/// The `hits` (best first; the best scoring `best`) as [`RetrievedOnly`] candidates in rank
/// order, if that is the order they come in: the rank goes by the relative score with its
/// bonus, which may round two close scores to one, and then by key (checked in one pass, as
/// [`Candidates::ranked`] does; otherwise `None`, and the candidates are gathered and ranked).
pub(super) fn retrieved_only<'h, 'a>(
    hits: &'h [KeyHit<'a>],
    best: f32,
) -> Option<impl Iterator<Item = RetrievedOnly<'a>> + 'h> {
    let candidate = move |hit: &KeyHit<'a>| RetrievedOnly {
        key: hit.key,
        attachment: hit.attachment,
        relative: relative_score(hit.score, best),
        score: hit.score,
    };
    let rank = |c: RetrievedOnly<'a>| Rank::new(class::RELEVANT, c.rank_score(), c.key, 0);
    let in_order = hits
        .windows(2)
        .all(|w| rank(candidate(&w[0])).cmp(&rank(candidate(&w[1]))).is_le());
    in_order.then(|| hits.iter().map(candidate))
}

/// A candidate's place in the ranking: class, then score (higher first), then key.
#[derive(Clone, Copy)]
struct Rank<'a> {
    /// Class and score in one integer that orders as they do (see [`Rank::new`]): one compare
    /// instead of two, the key only on a tie.
    order: u64,
    key: &'a str,
    at: usize,
}

impl<'a> Rank<'a> {
    fn new(class: u8, score: f32, key: &'a str, at: usize) -> Self {
        Rank {
            // The score as the top k orders it: `f32::total_cmp`'s order, higher first.
            order: u64::from(class) << 32 | u64::from(best_first_key(score)),
            key,
            at,
        }
    }

    /// Keys are unique, so the order is total and an unstable sort or selection is
    /// deterministic.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.order
            .cmp(&other.order)
            .then_with(|| self.key.cmp(other.key))
    }
}

/// The candidates gathered so far, by key; a tool found several ways keeps its best class and
/// all its reasons. A candidate whose tool is not in the snapshot (a skill may list a tool
/// that is gone) counts for nothing, as if it had never been added.
pub(super) struct Candidates<'a> {
    /// The snapshot's tools.
    tools: RowLookup<'a, Tool>,
    list: Vec<Candidate<'a>>,
    /// The ranking [`ranked`](Self::ranked) makes (kept for its memory).
    order: Vec<Rank<'a>>,
    /// Position in `list` by key, of the first `indexed` candidates: the retrieved tools join
    /// the list unrecorded ([`Candidates::retrieved`]), and are recorded only if a later add
    /// needs to find them (most selections add nothing after them).
    by_key: KeyTable,
    indexed: usize,
}

thread_local! {
    /// The memory of the last selection's candidates on this thread, empty: a selection
    /// gathers a hundred or more candidates of a few hundred bytes, and allocating that afresh
    /// each turn cost as much as ranking them.
    static SPARE: Cell<Spare> = Cell::default();
}

/// What a selection's candidates leave for the next one on the thread: their memory, empty.
#[derive(Default)]
struct Spare {
    list: Vec<Candidate<'static>>,
    by_key: KeyTable,
    order: Vec<Rank<'static>>,
}

/// `list`, emptied, as a list of another item type (here: the same type with another
/// lifetime), in the same memory (collecting a vector's own items into a vector of a type of
/// the same layout reuses its allocation).
// `filter`, as clippy would have it, cannot change the item type.
#[allow(clippy::unnecessary_filter_map)]
fn relabel<A, B>(mut list: Vec<A>) -> Vec<B> {
    list.clear();
    list.into_iter().filter_map(|_| None).collect()
}

impl<'a> Candidates<'a> {
    pub fn new(snapshot: &'a Snapshot) -> Result<Self, StoreError> {
        // Pinned tools, a few skills' tools (dependencies included) and the retrieved ones:
        // rarely more.
        const EXPECTED: usize = 128;
        let spare = take_from(&SPARE);
        let mut list = relabel(spare.list);
        list.reserve(EXPECTED);
        let mut by_key = spare.by_key;
        by_key.reset(EXPECTED);
        Ok(Candidates {
            tools: snapshot.lookup(&TOOLS)?,
            list,
            order: relabel(spare.order),
            by_key,
            indexed: 0,
        })
    }

    /// Whether no candidate has been added yet.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The snapshot's tools, for looking up candidates.
    pub fn tools(&self) -> RowLookup<'a, Tool> {
        self.tools
    }

    /// Position of `key`'s candidate, or where to record it.
    #[inline]
    fn probe(&mut self, key: &str) -> Probe {
        if self.indexed < self.list.len() {
            self.record_all();
        }
        self.probe_recorded(key)
    }

    /// [`probe`](Self::probe) among the candidates recorded in `by_key`.
    #[inline]
    fn probe_recorded(&self, key: &str) -> Probe {
        self.by_key
            .probe(key, |at| self.list.get(at).map(|c| c.key))
    }

    /// Records the candidates not yet in `by_key` (keys are unique in the list).
    #[cold]
    fn record_all(&mut self) {
        while let Some(key) = self.list.get(self.indexed).map(|c| c.key) {
            let vacant = self.probe_recorded(key);
            self.by_key.insert(vacant, self.indexed);
            self.indexed += 1;
        }
    }

    /// Adds a tool already looked up.
    pub fn add(&mut self, entry: Entry<'a, Tool>, class: u8, score: f32, why: Why<'a>) {
        self.add_found(entry.key, Found::Yes(entry), class, score, why);
    }

    /// Adds the tool stored under `key` (found as `found` says), or merges it into its
    /// candidate: one hash and probe either way.
    fn add_found(&mut self, key: &'a str, found: Found<'a>, class: u8, score: f32, why: Why<'a>) {
        match self.probe(key) {
            Probe::Found(at) => {
                if let Some(c) = self.list.get_mut(at) {
                    // What is known of the tool only grows: looked up beats indexed beats
                    // not looked up.
                    match (c.found, found) {
                        (_, Found::Yes(_)) | (Found::NotLooked, Found::Indexed(..)) => {
                            c.found = found
                        }
                        _ => {}
                    }
                    c.merge(class, score, why);
                }
            }
            vacant => {
                // `probe` recorded every candidate: this one goes last.
                self.by_key.insert(vacant, self.list.len());
                self.indexed += 1;
                self.list
                    .push(Candidate::new(key, found, class, score, why));
            }
        }
    }

    /// Adds the tool stored under `key`, looked up only if it can reach the selection.
    pub fn add_lazy(&mut self, key: &'a str, class: u8, score: f32, why: Why<'a>) {
        self.add_found(key, Found::NotLooked, class, score, why);
    }

    /// For adding the tools one search of the snapshot's text index retrieved (see
    /// [`Retrieved`]).
    pub fn retrieved(&mut self) -> Retrieved<'_, 'a> {
        if self.indexed < self.list.len() {
            self.record_all();
        }
        Retrieved {
            // With no candidate yet (no pinned, named or skill tools), nothing to merge with.
            merge: !self.list.is_empty(),
            candidates: self,
        }
    }

    /// Adds the tool stored under `key`: looked up now, unless it is a candidate already.
    pub fn add_key(&mut self, key: &str, class: u8, score: f32, why: Why<'a>) {
        // A tool found again (a skill's tool also retrieved, a shared dependency) needs no
        // lookup yet: a candidate whose tool is gone counts for nothing, whatever it merged.
        if let Probe::Found(at) = self.probe(key) {
            if let Some(c) = self.list.get_mut(at) {
                c.merge(class, score, why);
            }
            return;
        }
        if let Some(entry) = self.tools.entry(key) {
            self.add(entry, class, score, why);
        }
    }

    /// [`add_key`](Self::add_key), saying whether the tool is in the snapshot.
    pub fn add_checked(&mut self, key: &str, class: u8, score: f32, why: Why<'a>) -> bool {
        if let Probe::Found(at) = self.probe(key) {
            if !self.exists(at) {
                return false;
            }
            if let Some(c) = self.list.get_mut(at) {
                c.merge(class, score, why);
            }
            return true;
        }
        let Some(entry) = self.tools.entry(key) else {
            return false;
        };
        self.add(entry, class, score, why);
        true
    }

    /// Whether the tool of candidate `at` is in the snapshot, looked up if that is not known.
    fn exists(&mut self, at: usize) -> bool {
        let Some(c) = self.list.get_mut(at) else {
            return false;
        };
        if let Found::NotLooked = c.found {
            c.found = match self.tools.entry(c.key) {
                Some(entry) => Found::Yes(entry),
                None => Found::No,
            };
        }
        !matches!(c.found, Found::No)
    }

    /// Whether a candidate was found through the message (named, discovered, skill, retrieved).
    pub fn any_matched(&mut self) -> bool {
        // Those known to be there first (retrieved or looked up): no lookup.
        let matching = |c: &Candidate<'_>| (class::EXACT..=class::RELEVANT).contains(&c.class);
        if self
            .list
            .iter()
            .any(|c| matching(c) && matches!(c.found, Found::Indexed(..) | Found::Yes(_)))
        {
            return true;
        }
        for at in 0..self.list.len() {
            if (class::EXACT..=class::RELEVANT).contains(&self.list[at].class) && self.exists(at) {
                return true;
            }
        }
        false
    }

    /// The candidates whose tool is in the snapshot, in rank order. With `needed`, only the
    /// first `needed` of that order (all that can matter when the policy consumes candidates
    /// strictly in order): a partial selection, then a sort of those alone, and lookups (of
    /// those not known to be in the snapshot) for those alone.
    pub fn ranked(&mut self, needed: Option<usize>) -> Ranked<'_, 'a> {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(
            self.list
                .iter()
                .enumerate()
                .map(|(at, c)| Rank::new(c.class, c.rank_score(), c.key, at)),
        );
        // Retrieved tools come best first, so a turn whose candidates were all retrieved has
        // them in rank order already: checked in one pass, where a sort of two dozen cost
        // three times that.
        let mut sorted = order.is_sorted_by(|a, b| a.cmp(b).is_le());
        // Up to 32 candidates (a turn without skills) sort outright for less than a partial
        // selection costs; the prefix is the same either way, the order being total.
        const SELECT_ABOVE: usize = 32;
        let mut cut = false;
        if let Some(needed) = needed
            && needed < order.len()
        {
            if sorted {
                // The prefix is at hand.
            } else if order.len() > SELECT_ABOVE {
                order.select_nth_unstable_by(needed, Rank::cmp);
            } else {
                order.sort_unstable_by(Rank::cmp);
                sorted = true;
            }
            order.truncate(needed);
            cut = true;
        }
        let mut missing = false;
        for r in &order {
            missing |= !self.exists(r.at);
        }
        if missing && cut {
            // Tools gone from the snapshot left the prefix short: rank them all.
            self.order = order;
            return self.ranked(None);
        }
        if !sorted {
            order.sort_unstable_by(Rank::cmp);
        }
        self.order = order;
        Ranked {
            list: &self.list,
            order: self.order.iter(),
        }
    }

    /// How many candidates are pinned (tools not yet looked up included).
    pub fn pinned(&self) -> usize {
        self.list
            .iter()
            .filter(|c| c.class == class::PINNED)
            .count()
    }
}

/// Adds the tools one search retrieved: they are in the snapshot (looked up only if sent), and
/// their keys are distinct, so each is merged with the candidates there were before the
/// search, if any, and otherwise joins the list without being recorded by key (hashing and
/// recording two dozen keys was a twelfth of a MetaTool selection, and is seldom needed).
pub(super) struct Retrieved<'c, 'a> {
    candidates: &'c mut Candidates<'a>,
    merge: bool,
}

impl<'a> Retrieved<'_, 'a> {
    /// Adds the retrieved tool `key` (with `row`, the hit's attachment: the tool's row), of
    /// BM25 score `score` and `relative` to the best hit's; a key may be given once.
    ///
    /// It takes the score, not a [`Why`]: a `Why` made by the caller was written to the stack
    /// a field at a time and copied into the list 16 bytes at a time, a load that waited for
    /// both stores to retire (two thirds of this function's time under `perf`). Made here, it
    /// is written where it stays.
    #[inline]
    pub fn add(
        &mut self,
        key: &'a Arc<str>,
        row: Option<&'a Attachment>,
        relative: f32,
        score: f32,
    ) {
        self.add_why(key, row, relative, Why::Retrieved { score });
    }

    /// [`Self::add`] for a tool that hybrid retrieval ranked (`why` is its `Why::Hybrid`).
    #[inline(always)]
    pub fn add_why(
        &mut self,
        key: &'a Arc<str>,
        row: Option<&'a Attachment>,
        relative: f32,
        why: Why<'a>,
    ) {
        let found = Found::Indexed(key, row);
        let c = &mut *self.candidates;
        if self.merge
            && let Probe::Found(at) = c.probe_recorded(key)
        {
            if let Some(c) = c.list.get_mut(at) {
                if let Found::NotLooked = c.found {
                    c.found = found;
                }
                c.merge(class::RELEVANT, relative, why);
            }
            return;
        }
        c.list
            .push(Candidate::new(key, found, class::RELEVANT, relative, why));
    }
}

/// The candidates in rank order ([`Candidates::ranked`]), those whose tool is gone left out.
pub(super) struct Ranked<'c, 'a> {
    list: &'c [Candidate<'a>],
    order: std::slice::Iter<'c, Rank<'a>>,
}

impl<'c, 'a> Iterator for Ranked<'c, 'a> {
    type Item = &'c Candidate<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        self.order
            .by_ref()
            .filter_map(|r| self.list.get(r.at))
            .find(|c| !matches!(c.found, Found::No))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.order.len()))
    }
}

impl Drop for Candidates<'_> {
    /// Leaves the memory for the next selection on this thread.
    fn drop(&mut self) {
        let spare = Spare {
            list: relabel(std::mem::take(&mut self.list)),
            by_key: std::mem::take(&mut self.by_key),
            order: relabel(std::mem::take(&mut self.order)),
        };
        put_back(&SPARE, spare);
    }
}

#[cfg(test)]
mod tests {
    use super::Rank;

    /// The order `Rank` had as three compares: class, then score (higher first, by
    /// `total_cmp`), then key.
    fn reference(a: &Rank<'_>, b: &Rank<'_>, scores: &[(u8, f32)]) -> std::cmp::Ordering {
        let (ca, sa) = scores[a.at];
        let (cb, sb) = scores[b.at];
        ca.cmp(&cb)
            .then(sb.total_cmp(&sa))
            .then_with(|| a.key.cmp(b.key))
    }

    #[test]
    fn packed_rank_orders_as_class_then_score_then_key() {
        let floats = [
            f32::NEG_INFINITY,
            -1.5,
            -f32::MIN_POSITIVE,
            -1e-45,
            -0.0,
            0.0,
            1e-45,
            f32::MIN_POSITIVE,
            0.45,
            0.9,
            1.0,
            1.1,
            f32::MAX,
            f32::INFINITY,
            f32::NAN,
            -f32::NAN,
        ];
        let mut scores = Vec::new();
        for class in [0u8, 3, 6] {
            for &f in &floats {
                scores.push((class, f));
            }
        }
        let keys = ["a", "b"];
        let ranks: Vec<Rank<'_>> = scores
            .iter()
            .enumerate()
            .flat_map(|(at, &(class, score))| {
                keys.iter()
                    .map(move |&key| Rank::new(class, score, key, at))
            })
            .collect();
        for a in &ranks {
            for b in &ranks {
                assert_eq!(
                    a.cmp(b),
                    reference(a, b, &scores),
                    "{:?}",
                    (a.at, a.key, b.at, b.key)
                );
            }
        }
    }

    /// Hits whose scores differ can rank alike once made relative and given their bonus (the
    /// division and the addition round); then the key decides, and hits that come by score
    /// are not in rank order: `retrieved_only` must say so, and the candidates are ranked.
    #[test]
    fn retrieved_only_checks_the_rank_order_of_close_scores() {
        use super::{KeyHit, Offered, RetrievedOnly, relative_score, retrieved_only};
        use std::sync::Arc;

        let best = 3.0f32;
        let key: Arc<str> = Arc::from("k");
        let rank_score = |score: f32| {
            RetrievedOnly {
                key: &key,
                attachment: None,
                relative: relative_score(score, best),
                score,
            }
            .rank_score()
        };
        // Two neighbouring floats below the best that rank alike (from 0.95 of the best up,
        // where the rank score passes 1 and its steps grow coarser than the relative score's).
        let Some((higher, lower)) = (0..1_000_000u32)
            .map(|i| f32::from_bits((0.95 * best).to_bits() + i))
            .map(|s| (f32::from_bits(s.to_bits() + 1), s))
            .find(|&(h, l)| rank_score(h) == rank_score(l))
        else {
            panic!("no two scores rank alike");
        };
        let (top, m, z) = (Arc::from("a"), Arc::from("m"), Arc::from("z"));
        let hit = |key, score| KeyHit {
            key,
            score,
            attachment: None,
        };
        let keys = |hits: &[KeyHit<'_>]| {
            retrieved_only(hits, best).map(|c| c.map(|c| c.shared_key()).collect::<Vec<_>>())
        };
        // By score, then key: in rank order too.
        let ordered = [hit(&top, best), hit(&m, higher), hit(&z, lower)];
        assert_eq!(
            keys(&ordered),
            Some(vec![top.clone(), m.clone(), z.clone()])
        );
        // By score, but the ranks tie and "z" > "m": not in rank order.
        let by_score_only = [hit(&top, best), hit(&z, higher), hit(&m, lower)];
        assert_eq!(keys(&by_score_only), None);
    }
}
