//! The candidates of one selection, gathered from every source before the policy ranks them.
//!
//! Everything here borrows from the snapshot, the policy and the turn: a candidate costs no key
//! copy, no shared-pointer bump and no reason strings. A skill brings dozens of candidates a
//! turn of which a dozen reach the [`Selection`](super::Selection); only those are turned into
//! [`SelectedTool`](super::SelectedTool)s and [`Dropped`](super::Dropped) entries, with their
//! [`Reason`]s, and only then.

use std::collections::HashMap;

use crate::Tool;
use crate::bm25::hash::StrState;
use crate::bm25::{Bm25Index, Explanation};
use crate::store::{Entry, Snapshot, StoreError};
use crate::tables::TOOLS;

use super::selection::Reason;

/// Candidates are ranked first by class (a pinned tool before a named one before a retrieved
/// one ...), then by score within the class.
pub(super) mod class {
    pub const PINNED: u8 = 0;
    pub const EXACT: u8 = 1;
    pub const DISCOVERED: u8 = 2;
    pub const RELEVANT: u8 = 3;
    pub const RECENT: u8 = 4;
    pub const KEPT: u8 = 5;
    pub const FALLBACK: u8 = 6;
}

/// How much a tool's own BM25 relevance adds to the score it got another way. All the tools of
/// a matched skill share one score; without this, a skill's unrelated tools (`delete_event`
/// for "book a flight and put it in my calendar") tied with, and by key order beat, the tools
/// whose own text matched (`search_flights`). Small, so that it orders within a score level
/// rather than across levels.
const RETRIEVAL_TIE_BREAK: f32 = 0.1;

/// A [`Reason`] with its text borrowed, made into a `Reason` only for the tools that reach the
/// selection ([`Why::reason`]).
#[derive(Debug, Clone, Copy)]
pub(super) enum Why<'a> {
    Pinned,
    PinnedSkill {
        skill: &'a str,
    },
    ExactName {
        mention: &'a str,
    },
    Discovered,
    /// The explanation, if the policy asks for one, is computed when the reason is made.
    Retrieved {
        score: f32,
    },
    Skill {
        skill: &'a str,
        score: f32,
    },
    DependencyOf {
        skill: &'a str,
        dependency: &'a str,
    },
    RecentlyUsed,
    KeptFromLastTurn,
    Fallback,
}

/// The per-term explanations of retrieved tools, when the policy asks for them.
pub(super) struct Explainer<'q> {
    /// The tools' text index, or `None` when the policy does not explain.
    pub index: Option<&'q Bm25Index>,
    pub query: &'q [(String, f32)],
}

impl Explainer<'_> {
    /// `Reason::Retrieved` of the tool `key` with BM25 score `score`.
    pub fn retrieved(&self, key: &str, score: f32) -> Reason {
        Reason::Retrieved {
            score,
            explanation: self.explain(key),
        }
    }

    fn explain(&self, key: &str) -> Option<Explanation> {
        self.index.and_then(|i| i.explain_weighted(key, self.query))
    }
}

impl Why<'_> {
    /// The public reason, for the tool `key`.
    pub fn reason(self, key: &str, explainer: &Explainer<'_>) -> Reason {
        match self {
            Why::Pinned => Reason::Pinned,
            Why::PinnedSkill { skill } => Reason::PinnedSkill {
                skill: skill.to_string(),
            },
            Why::ExactName { mention } => Reason::ExactName {
                mention: mention.to_string(),
            },
            Why::Discovered => Reason::Discovered,
            Why::Retrieved { score } => explainer.retrieved(key, score),
            Why::Skill { skill, score } => Reason::Skill {
                skill: skill.to_string(),
                score,
            },
            Why::DependencyOf { skill, dependency } => Reason::DependencyOf {
                skill: skill.to_string(),
                dependency: dependency.to_string(),
            },
            Why::RecentlyUsed => Reason::RecentlyUsed,
            Why::KeptFromLastTurn => Reason::KeptFromLastTurn,
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
    /// The strongest reason; `more` holds the others, in the order found. Most candidates have
    /// one reason, and an empty `Vec` costs no allocation.
    first: Why<'a>,
    more: Vec<Why<'a>>,
}

/// Whether a candidate's tool is in the snapshot.
#[derive(Clone, Copy)]
enum Found<'a> {
    NotLooked,
    Yes(Entry<'a, Tool>),
    No,
}

impl<'a> Candidate<'a> {
    fn bonus_of(why: &Why<'_>, score: f32) -> f32 {
        if matches!(why, Why::Retrieved { .. }) {
            RETRIEVAL_TIE_BREAK * score
        } else {
            0.0
        }
    }

    /// Another way the tool was found: it keeps its best class and all its reasons.
    fn merge(&mut self, class: u8, score: f32, why: Why<'a>) {
        self.bonus = self.bonus.max(Self::bonus_of(&why, score));
        if class < self.class || (class == self.class && score > self.score) {
            self.class = class;
            self.score = score;
            let weaker = std::mem::replace(&mut self.first, why);
            self.more.insert(0, weaker);
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

    /// Its reasons, strongest first.
    pub fn reasons(&self, explainer: &Explainer<'_>) -> Vec<Reason> {
        let key = self.key;
        let mut reasons = Vec::with_capacity(1 + self.more.len());
        reasons.push(self.first.reason(key, explainer));
        reasons.extend(self.more.iter().map(|why| why.reason(key, explainer)));
        reasons
    }
}

/// A candidate's place in the ranking: class, then score (higher first), then key.
#[derive(Clone, Copy)]
struct Rank<'a> {
    class: u8,
    score: f32,
    key: &'a str,
    at: usize,
}

impl Rank<'_> {
    /// Keys are unique, so the order is total and an unstable sort or selection is
    /// deterministic.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.class
            .cmp(&other.class)
            .then(other.score.total_cmp(&self.score))
            .then_with(|| self.key.cmp(other.key))
    }
}

/// The candidates gathered so far, by key; a tool found several ways keeps its best class and
/// all its reasons. A candidate whose tool is not in the snapshot (a skill may list a tool
/// that is gone) counts for nothing, as if it had never been added.
pub(super) struct Candidates<'a> {
    snapshot: &'a Snapshot,
    list: Vec<Candidate<'a>>,
    /// Position in `list` by key.
    by_key: HashMap<&'a str, usize, StrState>,
}

impl<'a> Candidates<'a> {
    pub fn new(snapshot: &'a Snapshot) -> Self {
        // Pinned tools, a few skills' tools (dependencies included) and the retrieved ones:
        // rarely more.
        const EXPECTED: usize = 128;
        Candidates {
            snapshot,
            list: Vec::with_capacity(EXPECTED),
            by_key: HashMap::with_capacity_and_hasher(EXPECTED, StrState::default()),
        }
    }

    /// Adds a tool already looked up.
    pub fn add(&mut self, entry: Entry<'a, Tool>, class: u8, score: f32, why: Why<'a>) {
        match self.by_key.get(&**entry.key) {
            Some(&at) => {
                let c = &mut self.list[at];
                c.found = Found::Yes(entry);
                c.merge(class, score, why);
            }
            None => self.push(entry.key, Found::Yes(entry), class, score, why),
        }
    }

    fn push(&mut self, key: &'a str, found: Found<'a>, class: u8, score: f32, why: Why<'a>) {
        self.by_key.insert(key, self.list.len());
        self.list.push(Candidate {
            key,
            found,
            class,
            score,
            bonus: Candidate::bonus_of(&why, score),
            first: why,
            more: Vec::new(),
        });
    }

    /// Adds the tool stored under `key`, looked up only if it can reach the selection.
    pub fn add_lazy(&mut self, key: &'a str, class: u8, score: f32, why: Why<'a>) {
        match self.by_key.get(key) {
            Some(&at) => self.list[at].merge(class, score, why),
            None => self.push(key, Found::NotLooked, class, score, why),
        }
    }

    /// Adds the tool stored under `key`: looked up now, unless it is a candidate already.
    pub fn add_key(
        &mut self,
        key: &str,
        class: u8,
        score: f32,
        why: Why<'a>,
    ) -> Result<(), StoreError> {
        // A tool found again (a skill's tool also retrieved, a shared dependency) needs no
        // lookup yet: a candidate whose tool is gone counts for nothing, whatever it merged.
        if let Some(&at) = self.by_key.get(key) {
            self.list[at].merge(class, score, why);
            return Ok(());
        }
        if let Some(entry) = self.snapshot.entry(&TOOLS, key)? {
            self.push(entry.key, Found::Yes(entry), class, score, why);
        }
        Ok(())
    }

    /// [`add_key`](Self::add_key), saying whether the tool is in the snapshot.
    pub fn add_checked(
        &mut self,
        key: &str,
        class: u8,
        score: f32,
        why: Why<'a>,
    ) -> Result<bool, StoreError> {
        if let Some(&at) = self.by_key.get(key) {
            if self.look_up(at)?.is_none() {
                return Ok(false);
            }
            self.list[at].merge(class, score, why);
            return Ok(true);
        }
        let Some(entry) = self.snapshot.entry(&TOOLS, key)? else {
            return Ok(false);
        };
        self.push(entry.key, Found::Yes(entry), class, score, why);
        Ok(true)
    }

    /// The tool of candidate `at`, looked up if it was not yet.
    fn look_up(&mut self, at: usize) -> Result<Option<Entry<'a, Tool>>, StoreError> {
        let c = &mut self.list[at];
        if let Found::NotLooked = c.found {
            c.found = match self.snapshot.entry(&TOOLS, c.key)? {
                Some(entry) => Found::Yes(entry),
                None => Found::No,
            };
        }
        Ok(match c.found {
            Found::Yes(entry) => Some(entry),
            _ => None,
        })
    }

    /// Whether a candidate was found through the message (named, discovered, skill, retrieved).
    pub fn any_matched(&mut self) -> Result<bool, StoreError> {
        for at in 0..self.list.len() {
            if (class::EXACT..=class::RELEVANT).contains(&self.list[at].class)
                && self.look_up(at)?.is_some()
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The candidates whose tool is in the snapshot, in rank order, with their tools. With
    /// `needed`, only the first `needed` of that order (all that can matter when the policy
    /// consumes candidates strictly in order): a partial selection, then a sort of those alone,
    /// and lookups for those alone.
    pub fn ranked(
        &mut self,
        needed: Option<usize>,
    ) -> Result<Vec<(&Candidate<'a>, Entry<'a, Tool>)>, StoreError> {
        let mut order: Vec<Rank<'a>> = self
            .list
            .iter()
            .enumerate()
            .map(|(at, c)| Rank {
                class: c.class,
                score: c.rank_score(),
                key: c.key,
                at,
            })
            .collect();
        let mut cut = false;
        if let Some(needed) = needed {
            if needed < order.len() {
                order.select_nth_unstable_by(needed, Rank::cmp);
                order.truncate(needed);
                cut = true;
            }
        }
        let mut missing = false;
        for r in &order {
            missing |= self.look_up(r.at)?.is_none();
        }
        if missing && cut {
            // Tools gone from the snapshot left the prefix short: rank them all.
            return self.ranked(None);
        }
        order.sort_unstable_by(Rank::cmp);
        Ok(order
            .into_iter()
            .filter_map(|r| {
                let c = &self.list[r.at];
                match c.found {
                    Found::Yes(entry) => Some((c, entry)),
                    _ => None,
                }
            })
            .collect())
    }

    /// How many candidates are pinned (tools not yet looked up included).
    pub fn pinned(&self) -> usize {
        self.list
            .iter()
            .filter(|c| c.class == class::PINNED)
            .count()
    }
}
