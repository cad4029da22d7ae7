//! Keeping the k best (score, slot) pairs of a stream: higher score first, then smaller key.
//!
//! For small k (the common top 10) the first k candidates are collected unsorted and sorted
//! once, as packed integers; after that the best k stay sorted and a candidate that beats the
//! k-th takes its place: few candidates beat a warm threshold, and this costs less than any
//! batching (selecting from a buffer cost a fifth of a query at N = 100). The place is found by
//! counting the better scores without a data-dependent branch: moving the candidate up by
//! swaps, one compare at a time, took 18% of a query's time at N = 100 under `perf`
//! (store-to-load stalls and mispredicted loop exits), counting takes about 7%; a binary search
//! took a fifth of the count's instructions at k = 24 but more time. For large k, where a
//! sorted insert is O(k), candidates are appended to a buffer of about 2k; when it fills,
//! `select_nth_unstable` keeps the best k, so the work stays linear in the candidates. Either
//! way the admission threshold is the k-th score. Keys are looked up only to break ties and for
//! the final k, since finding a slot's key costs two binary searches: looking it up for every
//! candidate cost a fifth of a query. The buffer is the thread's scratch (`scratch.rs`).

use std::cmp::Ordering;
use std::sync::Arc;

pub(crate) struct TopK<'b> {
    k: usize,
    /// Prune when the buffer reaches this length.
    limit: usize,
    /// Scores below this cannot enter the top k (scores equal to it may, on a smaller key).
    threshold: f32,
    /// A buffer reused across queries (see `scratch.rs`).
    items: &'b mut Vec<(f32, u32)>,
}

/// Up to this k, candidates are inserted in sorted order.
const SORTED_UP_TO: usize = 64;

/// Best first: higher score, then smaller key.
fn rank<'k>(
    a: &(f32, u32),
    b: &(f32, u32),
    key: &impl Fn(u32) -> Option<&'k Arc<str>>,
) -> Ordering {
    b.0.total_cmp(&a.0).then_with(|| key(a.1).cmp(&key(b.1)))
}

/// `score` as an integer that orders as [`f32::total_cmp`] does, reversed: best first. Also
/// the score half of the selection's candidate ranks (`context::candidates`).
#[inline]
pub(crate) fn best_first_key(score: f32) -> u32 {
    // `total_cmp`'s own transformation (negative values get their magnitude bits flipped),
    // then the sign bit flipped to order as unsigned, then everything flipped to reverse.
    let bits = score.to_bits() as i32;
    let ordered = bits ^ (((bits >> 31) as u32) >> 1) as i32;
    !(ordered as u32 ^ 0x8000_0000)
}

/// The inverse of [`best_first_key`], to the bit.
#[inline]
fn score_of_key(key: u32) -> f32 {
    let ordered = (!key ^ 0x8000_0000) as i32;
    f32::from_bits((ordered ^ (((ordered >> 31) as u32) >> 1) as i32) as u32)
}

/// Sorts `items` by [`rank`]. Up to [`SORTED_UP_TO`] items, as integers: (score key, slot)
/// packed in a `u64` sorts with the standard library's branch-free networks, where a sort
/// calling `rank` cost a tenth of a selection (MetaTool, k = 24); then each run of equal
/// scores, ordered by slot so far, is sorted by key (rare: keys cost two binary searches).
fn sort_best_first<'k>(items: &mut [(f32, u32)], key: &impl Fn(u32) -> Option<&'k Arc<str>>) {
    if items.len() > SORTED_UP_TO {
        items.sort_unstable_by(|a, b| rank(a, b, key));
        return;
    }
    let mut packed = [0u64; SORTED_UP_TO];
    let packed = packed.get_mut(..items.len()).unwrap_or_default();
    for (p, &(score, slot)) in packed.iter_mut().zip(items.iter()) {
        *p = u64::from(best_first_key(score)) << 32 | u64::from(slot);
    }
    sort_distinct(packed);
    let mut ties = false;
    let mut last = None;
    for (item, &p) in items.iter_mut().zip(packed.iter()) {
        let score_key = (p >> 32) as u32;
        ties |= last == Some(score_key);
        last = Some(score_key);
        *item = (score_of_key(score_key), p as u32);
    }
    if ties {
        for run in items.chunk_by_mut(|a, b| a.0.to_bits() == b.0.to_bits()) {
            if run.len() > 1 {
                run.sort_unstable_by(|a, b| key(a.1).cmp(&key(b.1)));
            }
        }
    }
}

/// Up to this many items, [`sort_distinct`] places each by counting the smaller ones.
const RANK_SORT_UP_TO: usize = 32;

/// Sorts distinct integers ascending. Up to [`RANK_SORT_UP_TO`], each goes straight to its
/// place, the number of smaller ones, counted without a branch: n² compares that never
/// mispredict. The standard library's insertion sort mispredicted at every element's stop:
/// sorting the top 18 of a MetaTool selection took 1.5k instructions and 5% of its time.
fn sort_distinct(values: &mut [u64]) {
    if values.len() > RANK_SORT_UP_TO {
        values.sort_unstable();
        return;
    }
    let mut sorted = [0u64; RANK_SORT_UP_TO];
    for &v in values.iter() {
        let smaller: usize = values.iter().map(|&w| usize::from(w < v)).sum();
        if let Some(place) = sorted.get_mut(smaller) {
            *place = v;
        }
    }
    values.copy_from_slice(sorted.get(..values.len()).unwrap_or_default());
}

impl<'b> TopK<'b> {
    /// An empty top `k`, keeping its candidates in `buffer` (cleared first).
    pub(crate) fn new(k: usize, buffer: &'b mut Vec<(f32, u32)>) -> Self {
        buffer.clear();
        buffer.reserve(k.min(SORTED_UP_TO) + 1);
        Self {
            k,
            limit: k.saturating_mul(2).max(k.saturating_add(32)),
            threshold: f32::NEG_INFINITY,
            items: buffer,
        }
    }

    /// The admission threshold: scores below it cannot enter (`-inf` until k are in).
    #[inline]
    pub(crate) fn threshold(&self) -> f32 {
        self.threshold
    }

    /// Whether a candidate with `score` could enter (checked before running filters on it).
    #[inline]
    pub(crate) fn admits(&self, score: f32) -> bool {
        score >= self.threshold
    }

    /// Offers a candidate (which [`Self::admits`] should have let through). Inlined into the
    /// scan: most pushes only append while the top k fills up.
    #[inline]
    pub(crate) fn push<'k>(
        &mut self,
        score: f32,
        slot: u32,
        key: &impl Fn(u32) -> Option<&'k Arc<str>>,
    ) {
        if self.k > SORTED_UP_TO {
            self.items.push((score, slot));
            if self.items.len() >= self.limit {
                self.prune(key);
            }
            return;
        }
        if self.items.len() + 1 < self.k {
            // Filling up: no threshold yet, so order does not matter until the k-th arrives.
            self.items.push((score, slot));
            return;
        }
        self.insert_sorted(score, slot, key);
    }

    /// [`Self::push`] of small k once the k-th candidate arrives: sort the k, or put a better
    /// candidate in its place among the sorted k.
    fn insert_sorted<'k>(
        &mut self,
        score: f32,
        slot: u32,
        key: &impl Fn(u32) -> Option<&'k Arc<str>>,
    ) {
        let item = (score, slot);
        if self.items.len() + 1 == self.k {
            self.items.push(item);
            sort_best_first(self.items, key);
        } else {
            let items = &mut self.items[..];
            // `rank(..) == Less` written out, so the common case compares two floats.
            let better =
                |a: &(f32, u32), b: &(f32, u32)| a.0 > b.0 || (a.0 == b.0 && key(a.1) < key(b.1));
            if !items.last().is_some_and(|last| better(&item, last)) {
                return;
            }
            // The candidate's place is the number of items better than it (they are sorted):
            // those with a higher score, counted without a branch, then those with the same
            // score and a smaller key. A binary search takes a fifth of the count's
            // instructions, but its branches made queries slower: plain top-10 searches at
            // N = 100 took 5% longer, ToolBench selects (k = 24) 5%. Moving the candidate up
            // one compare at a time mispredicted its loop exit every time.
            let mut at: usize = items.iter().map(|x| usize::from(x.0 > score)).sum();
            if items.get(at).is_some_and(|x| x.0 == score) {
                let mine = key(slot);
                at += items
                    .get(at..)
                    .unwrap_or_default()
                    .iter()
                    .take_while(|x| x.0 == score)
                    .filter(|x| key(x.1) < mine)
                    .count();
            }
            // The last item drops out: a shift by one (`rotate_right` called a generic
            // routine costing more than the rest of the push).
            let end = items.len().saturating_sub(1);
            if at < end {
                items.copy_within(at..end, at + 1);
            }
            if let Some(place) = items.get_mut(at) {
                *place = item;
            }
        }
        if let Some(last) = self.items.last() {
            self.threshold = last.0;
        }
    }

    fn prune<'k>(&mut self, key: &impl Fn(u32) -> Option<&'k Arc<str>>) {
        if self.k == 0 {
            self.items.clear();
            return;
        }
        if self.items.len() > self.k {
            self.items
                .select_nth_unstable_by(self.k - 1, |a, b| rank(a, b, key));
            self.items.truncate(self.k);
        }
        if self.items.len() == self.k
            && let Some(last) = self.items.iter().map(|i| i.0).reduce(f32::min)
        {
            self.threshold = last;
        }
    }

    /// The best k, best first (`key` gives a slot's key), each made by `make` from its slot
    /// and score (`None` leaves it out).
    pub(crate) fn into_hits<'k, T>(
        mut self,
        key: &impl Fn(u32) -> Option<&'k Arc<str>>,
        make: impl Fn(u32, f32) -> Option<T>,
    ) -> Vec<T> {
        self.prune(key);
        // Small k keeps its items sorted once there are k of them.
        if self.k > SORTED_UP_TO || self.items.len() < self.k {
            sort_best_first(self.items, key);
        }
        let mut hits = Vec::with_capacity(self.items.len());
        for &(score, slot) in self.items.iter() {
            hits.extend(make(slot, score));
        }
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(k: usize, scores: &[(f32, &str)]) -> Vec<(String, f32)> {
        let keys: Vec<Arc<str>> = scores.iter().map(|&(_, k)| Arc::from(k)).collect();
        let key = |slot: u32| keys.get(slot as usize);
        let mut buffer = Vec::new();
        let mut top = TopK::new(k, &mut buffer);
        for (i, &(s, _)) in scores.iter().enumerate() {
            if top.admits(s) {
                top.push(s, i as u32, &key);
            }
        }
        top.into_hits(&key, |slot, score| Some((key(slot)?.to_string(), score)))
    }

    #[test]
    fn keeps_the_best_with_ties_by_key() {
        let input: Vec<(f32, String)> = (0..200)
            .map(|i| ((i % 7) as f32, format!("k{:03}", 199 - i)))
            .collect();
        let refs: Vec<(f32, &str)> = input.iter().map(|(s, k)| (*s, k.as_str())).collect();
        let mut expected: Vec<(String, f32)> = input.iter().map(|(s, k)| (k.clone(), *s)).collect();
        expected.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for k in [0, 1, 3, 10, 50, 199, 200, 1000] {
            let want: Vec<_> = expected.iter().take(k).cloned().collect();
            assert_eq!(run(k, &refs), want, "k = {k}");
        }
    }

    #[test]
    fn score_keys_order_as_total_cmp_reversed_and_round_trip() {
        let mut values = vec![
            f32::NEG_INFINITY,
            f32::MIN,
            -1.5,
            -f32::MIN_POSITIVE,
            -0.0,
            0.0,
            f32::MIN_POSITIVE,
            1e-40,
            1.0,
            1.0000001,
            f32::MAX,
            f32::INFINITY,
            f32::NAN,
            -f32::NAN,
        ];
        values.extend((0..2000u32).map(|i| f32::from_bits(i.wrapping_mul(0x9e37_79b9))));
        for &a in &values {
            assert_eq!(score_of_key(best_first_key(a)).to_bits(), a.to_bits());
            for &b in &values {
                assert_eq!(
                    best_first_key(a).cmp(&best_first_key(b)),
                    b.total_cmp(&a),
                    "{a} {b}"
                );
            }
        }
    }

    #[test]
    fn the_integer_sort_is_the_rank_sort() {
        // Few distinct scores, so most items tie; keys in an order unrelated to slots.
        let keys: Vec<Arc<str>> = (0..64u32)
            .map(|i| Arc::from(format!("k{:02}", (i * 37) % 64)))
            .collect();
        let key = |slot: u32| keys.get(slot as usize);
        let mut state = 7u64;
        for len in 0..=SORTED_UP_TO + 3 {
            let mut items: Vec<(f32, u32)> = (0..len as u32)
                .map(|slot| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (((state >> 60) as f32) * 0.25, slot)
                })
                .collect();
            let mut want = items.clone();
            want.sort_by(|a, b| rank(a, b, &key));
            sort_best_first(&mut items, &key);
            assert_eq!(items, want, "{len}");
        }
    }

    #[test]
    fn sort_distinct_sorts_at_every_length() {
        // Across the rank sort's bound (32) and past it, with the values packed as the top k
        // packs them (high halves often equal, low halves distinct).
        let mut state = 7u64;
        for len in 0..=40u64 {
            let mut values: Vec<u64> = (0..len)
                .map(|i| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (state >> 61) << 32 | (len - i)
                })
                .collect();
            let mut want = values.clone();
            want.sort_unstable();
            sort_distinct(&mut values);
            assert_eq!(values, want, "{len}");
        }
    }

    #[test]
    fn huge_k_does_not_overflow() {
        assert_eq!(run(usize::MAX, &[(1.0, "a"), (2.0, "b")]).len(), 2);
    }
}
