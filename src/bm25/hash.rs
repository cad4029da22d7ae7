//! Hashing terms once: every segment's dictionary is keyed by a term's 64-bit hash, so a query
//! hashes each term once and probes each segment with it, and a merge re-keys terms
//! without re-hashing their text. Equal hashes of different terms are handled (see
//! [`crate::bm25::segment::Segment::lookup`]), so the hash only needs to be fast and well mixed.

use std::hash::{BuildHasherDefault, Hasher};

/// A 64-bit hash of `term`, in the style of wyhash: the text is read as at most two 64-bit
/// words for short terms (most terms), folded 16 bytes at a time for longer ones, and mixed by a
/// 64 × 64 → 128-bit multiplication, so every output bit depends on every input bit (the maps
/// below use the hash as is). About 7 ns a term; a byte-at-a-time hash cost 2.5× that, which
/// showed in the cost of an insert.
pub(crate) fn term_hash(term: &str) -> u64 {
    let h = strong_hash(term);
    // Unit tests fold the hash to 6 bits, so that every one of them meets terms of the same
    // hash and the text checks decide (which the real hash almost never exercises).
    if cfg!(test) { h & 0x3f } else { h }
}

const P0: u64 = 0xa076_1d64_78bd_642f;
const P1: u64 = 0xe703_7ed1_a0b4_28db;

fn strong_hash(term: &str) -> u64 {
    bytes_hash(term.as_bytes())
}

fn bytes_hash(b: &[u8]) -> u64 {
    let n = b.len();
    let word = |c: Option<&[u8; 8]>| c.map_or(0, |c| u64::from_le_bytes(*c));
    let (lo, hi) = if n >= 8 {
        let mut acc = 0u64;
        let mut rest = b;
        while rest.len() > 16 {
            let (head, tail) = rest.split_at(16);
            let x = word(head.first_chunk::<8>());
            let y = word(head.last_chunk::<8>());
            acc = mix(x ^ P0 ^ acc, y ^ P1);
            rest = tail;
        }
        (word(b.first_chunk::<8>()) ^ acc, word(b.last_chunk::<8>()))
    } else if n >= 4 {
        let half = |c: Option<&[u8; 4]>| c.map_or(0, |c| u64::from(u32::from_le_bytes(*c)));
        (half(b.first_chunk::<4>()), half(b.last_chunk::<4>()))
    } else {
        let byte = |i: usize| b.get(i).map_or(0, |&x| u64::from(x));
        (
            byte(0) << 16 | byte(n / 2) << 8 | byte(n.wrapping_sub(1)),
            0,
        )
    };
    // The length goes above the bits short terms fill, so that `ab` (a, b, b) and `abc`
    // (a, b, c) cannot cancel out.
    mix(lo ^ P0 ^ ((n as u64) << 32), hi ^ P1)
}

#[inline]
fn mix(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

/// A `Hasher` for string keys (a selection's candidates, by tool key): the term hash above,
/// where the standard SipHash was a tenth of a selection. Keys are the application's own tool
/// names, not attacker-chosen, so flooding resistance is not needed.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StrHasher(u64);

impl Hasher for StrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0 = mix(self.0 ^ bytes_hash(bytes), P1);
    }

    fn write_u8(&mut self, byte: u8) {
        // `str`'s hash ends with a 0xff marker byte: folding it in is enough.
        self.0 ^= u64::from(byte);
    }
}

/// Builds [`StrHasher`]s.
pub(crate) type StrState = BuildHasherDefault<StrHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn no_collisions_among_short_words_and_numbers() {
        let mut seen = HashSet::new();
        let letters: Vec<char> = ('a'..='z').collect();
        for &a in &letters {
            for &b in &letters {
                for &c in &letters {
                    for w in [format!("{a}"), format!("{a}{b}"), format!("{a}{b}{c}")] {
                        seen.insert((strong_hash(&w), w));
                    }
                }
            }
        }
        for i in 0..100_000 {
            for w in [format!("{i}"), format!("w{i}"), format!("tool_name_{i}")] {
                seen.insert((strong_hash(&w), w));
            }
        }
        let hashes: HashSet<u64> = seen.iter().map(|&(h, _)| h).collect();
        assert_eq!(hashes.len(), seen.len());
    }

    #[test]
    fn hashes_differ_and_are_stable() {
        let long = "x".repeat(100);
        let longer = "x".repeat(101);
        let words = [
            "",
            "a",
            "b",
            "ab",
            "ba",
            "abc",
            "acb",
            "abcd",
            "weather",
            "weathers",
            "abcdefgh",
            "abcdefghi",
            "abcdefghijklmnopq",
            "abcdefghijklmnopr",
            &long,
            &longer,
        ];
        let hashes: HashSet<u64> = words.iter().map(|w| strong_hash(w)).collect();
        assert_eq!(hashes.len(), words.len());
        assert_eq!(term_hash("weather"), term_hash("weather"));
        assert_ne!(strong_hash("a"), strong_hash("a\0"));
    }
}
