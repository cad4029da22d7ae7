//! Test support: every string of a given length over a small alphabet, for exhaustive checks of
//! the tokenizer's fast paths against the general ones.

/// Calls `check` with every `len`-character string over `alphabet`.
pub(crate) fn for_each_string(alphabet: &[char], len: u32, mut check: impl FnMut(&str)) {
    let mut text = String::new();
    for n in 0..alphabet.len().pow(len) {
        text.clear();
        let mut k = n;
        for _ in 0..len {
            text.push(alphabet[k % alphabet.len()]);
            k /= alphabet.len();
        }
        check(&text);
    }
}
