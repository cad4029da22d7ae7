//! Merging a run of consecutive segments into one, and the policy that picks the runs.
//!
//! Linear in the run's postings, and mostly copies: the new segment starts from the oldest
//! input's dictionary (the largest, in this policy) so that its term ids stay, other inputs'
//! terms are re-keyed once each by their stored hash (no re-hashing of text), and every term's
//! postings are copied list by list (inputs are in slot order, so concatenation keeps them
//! sorted). A removed document whose removal record is in the run is dropped together with
//! that record; records whose document lies outside the run are carried over. Slots never
//! change, so the index's key → slot map needs no update.

use std::sync::Arc;

use super::builder::{Builder, offset};
use super::postings::{List, Posting, Postings, ShortPosting};
use super::segment::{NO_TERM, Segment, fits_short};
use super::tombstones::Tombstones;

/// The default merge factor: a merge takes `MERGE_FACTOR` segments of one size class. 3 rather
/// than 4: at most two segments per size class instead of three makes queries on an index built
/// by single inserts up to 1.5× faster at N = 1,000 (4 segments instead of 10), for about 15%
/// more merge work (measured; see [`crate::bm25`]).
pub(crate) const MERGE_FACTOR: usize = 3;

/// One input of a merge, with what the merge decided about it.
struct Input<'a> {
    seg: &'a Segment,
    /// Documents dropped (removed, with their removal record in the run), ascending.
    purged: Vec<usize>,
    /// Per term, how many of its postings belong to purged documents; empty if none.
    purged_df: Vec<u32>,
    /// Term id in the input → term id in the merged segment, or [`NO_TERM`] if it has
    /// nothing left; empty means the identity.
    remap: Vec<u32>,
}

impl Input<'_> {
    fn purged_df(&self, id: u32) -> u32 {
        self.purged_df.get(id as usize).copied().unwrap_or(0)
    }

    fn new_id(&self, id: u32) -> u32 {
        if self.remap.is_empty() {
            id
        } else {
            self.remap.get(id as usize).copied().unwrap_or(NO_TERM)
        }
    }
}

/// One segment holding everything `run` (consecutive segments, oldest first) holds. `dead`
/// marks the removed slots.
pub(crate) fn merge(run: &[Arc<Segment>], dead: &Tombstones) -> Segment {
    let lo = run.first().map_or(0, |s| s.lo);
    let hi = run.last().map_or(lo, |s| s.hi);
    // Removals recorded in the run whose document is in the run: both disappear.
    let mut cancelled: Vec<u32> = run
        .iter()
        .flat_map(|s| s.neg_slots.iter().copied())
        .filter(|&slot| lo <= slot && slot < hi)
        .collect();
    cancelled.sort_unstable();
    let is_purged = |slot: u32| dead.contains(slot) && cancelled.binary_search(&slot).is_ok();

    let mut inputs: Vec<Input<'_>> = run
        .iter()
        .map(|seg| {
            let purged: Vec<usize> = (0..seg.slots.len())
                .filter(|&doc| seg.slots.get(doc).is_some_and(|&s| is_purged(s)))
                .collect();
            let mut purged_df = Vec::new();
            if !purged.is_empty() {
                purged_df = vec![0u32; seg.n_terms()];
                for &doc in &purged {
                    for id in seg.doc_terms(doc) {
                        if let Some(n) = purged_df.get_mut(id as usize) {
                            *n += 1;
                        }
                    }
                }
            }
            Input {
                seg,
                purged,
                purged_df,
                remap: Vec::new(),
            }
        })
        .collect();

    let docs = run.iter().map(|s| s.slots.len()).sum();
    let postings = run.iter().map(|s| s.postings.len()).sum();
    // Inherit the oldest input's dictionary unless some of its terms may have nothing left, or
    // already have nothing (a merge that cancels an insert against its removal leaves their
    // terms behind with no postings and no removals): inheriting those would carry them on
    // forever, and under insert/remove churn the trailing segment's dictionary grew by every
    // cancelled document's terms, making each removal slower than the last.
    let mut b = match inputs.first() {
        Some(first) if first.purged.is_empty() && !has_empty_terms(first.seg) => {
            Builder::inheriting(first.seg, lo, hi, docs, postings)
        }
        _ => {
            let mut b = Builder::new(lo, hi);
            b.reserve(docs, postings);
            b
        }
    };
    let inherited = b.n_terms();
    let more_terms: usize = inputs
        .iter()
        .skip(usize::from(inherited > 0))
        .map(|i| i.seg.n_terms())
        .sum();
    let more_bytes: usize = inputs
        .iter()
        .skip(usize::from(inherited > 0))
        .map(|i| i.seg.text.len())
        .sum();
    b.reserve_terms(more_terms, more_bytes);
    for (i, input) in inputs.iter_mut().enumerate() {
        if i == 0 && inherited > 0 {
            continue; // identity remap
        }
        let seg = input.seg;
        input.remap = (0..seg.n_terms())
            .map(|id| {
                let id = u32::try_from(id).unwrap_or(NO_TERM);
                let left = seg.postings_len(id) > input.purged_df(id) as usize;
                let needed =
                    left || seg.df(id) != seg.postings_len(id) as i64 || input.purged_df(id) > 0;
                if needed {
                    b.intern(seg.term(id), seg.hash(id))
                } else {
                    NO_TERM
                }
            })
            .collect();
    }

    // Postings: count, then copy list by list.
    let n_terms = b.n_terms();
    let mut starts = vec![0u32; n_terms + 1];
    for input in &inputs {
        for id in 0..input.seg.n_terms() {
            let id = u32::try_from(id).unwrap_or(NO_TERM);
            if let Some(n) = starts.get_mut(input.new_id(id) as usize + 1) {
                *n += offset(input.seg.postings_len(id)) - input.purged_df(id);
            }
        }
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    // The short layout when the merged segment qualifies: its slots stay exactly `lo..hi`
    // (nothing purged, every input's slots exact) and are few enough.
    let kept: usize = inputs
        .iter()
        .map(|i| i.seg.slots.len() - i.purged.len())
        .sum();
    let postings = if fits_short(kept, lo, hi) {
        Postings::Short(copy_lists(
            &inputs,
            &starts,
            is_purged,
            |p| p.short(lo),
            |list, dst| {
                match list {
                    List::Short {
                        lo: from, postings, ..
                    } => {
                        // Consecutive inputs: this one's documents follow the ones before it.
                        let shift = from.wrapping_sub(lo) as u16;
                        for (dst, p) in dst.iter_mut().zip(postings) {
                            *dst = ShortPosting {
                                doc: p.doc.wrapping_add(shift),
                                ..*p
                            };
                        }
                    }
                    List::Long(list) => {
                        for (dst, p) in dst.iter_mut().zip(list) {
                            *dst = p.short(lo);
                        }
                    }
                }
            },
        ))
    } else {
        Postings::Long(copy_lists(
            &inputs,
            &starts,
            is_purged,
            |p| p,
            |list, dst| match list {
                List::Long(list) => dst.copy_from_slice(list),
                List::Short { .. } => {
                    for (dst, p) in dst.iter_mut().zip(list.iter()) {
                        *dst = p;
                    }
                }
            },
        ))
    };

    // Documents, removal records and document frequencies of removals.
    for input in &inputs {
        let seg = input.seg;
        let mut purged = input.purged.iter().peekable();
        for (doc, &slot) in seg.slots.iter().enumerate() {
            if purged.next_if_eq(&&doc).is_some() {
                continue;
            }
            let (Some(key), Some(len)) = (seg.key(doc), seg.doc_len(doc)) else {
                continue;
            };
            let ids = seg.doc_terms(doc).map(|id| input.new_id(id));
            let attachment = seg.attachment(doc).cloned();
            b.push_doc(slot, Arc::clone(key), attachment, len, ids);
        }
        for id in 0..seg.n_terms() {
            let id = u32::try_from(id).unwrap_or(NO_TERM);
            let neg = seg.postings_len(id) as i64 - seg.df(id);
            let change = neg - i64::from(input.purged_df(id));
            if change != 0 {
                b.add_neg_df(input.new_id(id), change);
            }
        }
        for (&slot, &len) in seg.neg_slots.iter().zip(&seg.neg_lens) {
            if !(lo <= slot && slot < hi) {
                b.negative(slot, len, []);
            }
        }
    }
    b.finish_with(starts, postings)
}

/// Every input's postings laid out by merged term (`starts` being where each term's begin),
/// each as `convert` makes it; `copy` copies a whole list none of whose documents is purged.
fn copy_lists<T: Copy>(
    inputs: &[Input<'_>],
    starts: &[u32],
    is_purged: impl Fn(u32) -> bool,
    convert: impl Fn(Posting) -> T,
    copy: impl Fn(List<'_>, &mut [T]),
) -> Vec<T> {
    let empty = convert(Posting {
        slot: 0,
        tf: 0.0,
        dl: 0.0,
    });
    let mut cursor = starts.to_vec();
    let mut out = vec![empty; starts.last().map_or(0, |&n| n as usize)];
    for input in inputs {
        for id in 0..input.seg.n_terms() {
            let id = u32::try_from(id).unwrap_or(NO_TERM);
            let Some(at) = cursor.get_mut(input.new_id(id) as usize) else {
                continue;
            };
            let list = input.seg.postings(id);
            if input.purged_df(id) == 0 {
                let from = *at as usize;
                if let Some(dst) = out.get_mut(from..from + list.len()) {
                    copy(list, dst);
                }
                *at += offset(list.len());
            } else {
                let mut put = |p: Posting| {
                    if !is_purged(p.slot) {
                        if let Some(dst) = out.get_mut(*at as usize) {
                            *dst = convert(p);
                        }
                        *at += 1;
                    }
                };
                // Matched here rather than through `List::iter`, whose chained halves cost
                // registrations about 0.9% more instructions (merges after removals run this).
                match list {
                    List::Long(list) => list.iter().for_each(|&p| put(p)),
                    List::Short { lo, postings, .. } => {
                        postings.iter().for_each(|p| put(p.long(lo)))
                    }
                }
            }
        }
    }
    out
}

/// Whether `seg`'s dictionary holds a term with neither postings nor removals.
fn has_empty_terms(seg: &Segment) -> bool {
    (0..seg.n_terms()).any(|id| {
        let id = u32::try_from(id).unwrap_or(NO_TERM);
        seg.postings_len(id) == 0 && seg.df(id) == 0
    })
}

/// Size class of a segment: ⌊log_factor(records)⌋.
fn level(seg: &Segment, factor: usize) -> u32 {
    let mut records = seg.records().max(1);
    let mut level = 0;
    while records >= factor {
        records /= factor;
        level += 1;
    }
    level
}

/// The next run of `segments` (by index range) to merge, if any: the trailing `factor`
/// segments when they share a size class (the logarithmic method: each document is merged about
/// log_factor(N) times), or the last two when the newest outgrew the one before it (which a
/// merge that dropped many removed documents can cause), so classes never grow towards the end.
pub(crate) fn next_merge(
    segments: &[Arc<Segment>],
    factor: usize,
) -> Option<std::ops::Range<usize>> {
    let n = segments.len();
    let last = level(segments.get(n.checked_sub(1)?)?, factor);
    let prev = level(segments.get(n.checked_sub(2)?)?, factor);
    if prev < last {
        return Some(n - 2..n);
    }
    let run = segments
        .iter()
        .rev()
        .take_while(|s| level(s, factor) == last)
        .count();
    (run >= factor).then(|| n - run..n)
}
