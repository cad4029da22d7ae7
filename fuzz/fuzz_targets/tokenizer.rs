//! Arbitrary text through every tokenizer configuration: no panic, every token non-empty,
//! lowercase and free of white space.
#![no_main]

use capstore::bm25::{Tokenizer, TokenizerConfig};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, text)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(text);
    let tokenizer = Tokenizer::new(TokenizerConfig {
        split_identifiers: flags & 1 != 0,
        stop_words: flags & 2 != 0,
        stemming: flags & 4 != 0,
    });
    for token in tokenizer.tokenize(&text) {
        assert!(!token.is_empty(), "empty token from {text:?}");
        assert_eq!(
            token,
            token.to_lowercase(),
            "token not lowercase from {text:?}"
        );
        assert!(
            !token.chars().any(char::is_whitespace),
            "white space in {token:?}"
        );
    }
});
