//! FNV-1a, the small stable hash: the same bytes give the same number on every run, platform
//! and version, so it can be written down (export-name suffixes, tape keys, the vector cache's
//! checksum). Not for hash maps (see `bm25::hash`) and no defence against tampering.

/// The 32-bit FNV-1a hash of `bytes`.
pub(crate) fn fnv1a_32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// The 64-bit FNV-1a hash of `bytes`.
pub(crate) fn fnv1a_64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_widths_are_pinned() {
        // A change would rename exported tools, re-key recorded tapes and refuse every saved
        // vector cache: pin the published values.
        assert_eq!(fnv1a_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a_32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a_64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
