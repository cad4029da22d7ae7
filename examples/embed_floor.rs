//! What one core can do for all-MiniLM-L6-v2 in f32: the floor under embedding one message.
//!
//! Issue 22 asks for a 20-word message embedded in ≤ 5 ms on one core. This measures, on the
//! machine it runs on, what bounds that from below when the model computes in f32 (on an
//! x86 core without AVX-512 the only faster arithmetic is 8-bit integer, and
//! `scripts/minilm_reference.py --linear8` shows each 8-bit scheme moving the parity cosines
//! by 1.2–11 × 10⁻³, over the 1e-3 the issue allows):
//!
//! 1. the core's f32 matrix-product rate: candle's (gemm's) own kernel on a 1024³ product, best
//!    of five, which is as near the core's peak as that kernel gets;
//! 2. the model's arithmetic for one message (`TOKENS` tokens, 25 for the benchmark's 20-word
//!    message with its two markers) at that rate: the time its products take at the least;
//! 3. the model's 36 linear layers as a forward pass meets them: each of its 42 MB of weights
//!    read once per message, as the model reads them (random numbers of the same shapes).
//!
//! ```sh
//! RAYON_NUM_THREADS=1 cargo run --release --example embed_floor [TOKENS]
//! ```
//!
//! Numbers from this machine are in BENCHMARKS.md ("Hybrid retrieval", "Cost").

use std::hint::black_box;
use std::time::Instant;

use candle_core::{Device, Result, Tensor};

/// all-MiniLM-L6-v2's shapes (its `config.json`).
const HIDDEN: usize = 384;
const INTERMEDIATE: usize = 1536;
const LAYERS: usize = 6;

/// The best seconds of `runs` calls of `f`, after one call to warm up.
fn best_of(runs: usize, mut f: impl FnMut() -> Result<Tensor>) -> Result<f64> {
    black_box(f()?);
    let mut best = f64::MAX;
    for _ in 0..runs {
        let start = Instant::now();
        black_box(f()?);
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(best)
}

fn main() -> Result<()> {
    let tokens: usize = match std::env::args().nth(1) {
        Some(n) => n.parse().expect("TOKENS: a whole number"),
        None => 25,
    };
    if std::env::var("RAYON_NUM_THREADS").as_deref() != Ok("1") {
        eprintln!("note: RAYON_NUM_THREADS is not 1, so candle may use more than one core");
    }
    let cpu = Device::Cpu;

    let n = 1024;
    let a = Tensor::randn(0f32, 1.0, (n, n), &cpu)?;
    let b = Tensor::randn(0f32, 1.0, (n, n), &cpu)?;
    let seconds = best_of(5, || a.matmul(&b))?;
    let rate = 2.0 * (n * n * n) as f64 / seconds;
    println!(
        "f32 matrix product {n}³: {:.1} ms, {:.1} GFLOP/s",
        seconds * 1e3,
        rate / 1e9
    );

    // Per token and layer: query, key, value and output (HIDDEN²), the feed-forward block
    // (2 × HIDDEN × INTERMEDIATE), and attention over the message (2 × tokens × HIDDEN).
    let per_token_layer = 4 * HIDDEN * HIDDEN + 2 * HIDDEN * INTERMEDIATE + 2 * tokens * HIDDEN;
    let flops = 2.0 * (tokens * LAYERS * per_token_layer) as f64;
    println!(
        "one message of {tokens} tokens: {:.0} MFLOP; at that rate {:.2} ms (the floor in f32)",
        flops / 1e6,
        flops / rate * 1e3
    );

    // The linear layers in the order a forward pass runs them, weights laid out as candle-nn's
    // `Linear` keeps them ([out, in]) and applied as it does (x · wᵀ).
    let shapes = [
        (HIDDEN, HIDDEN),
        (HIDDEN, HIDDEN),
        (HIDDEN, HIDDEN),
        (HIDDEN, HIDDEN),
        (INTERMEDIATE, HIDDEN),
        (HIDDEN, INTERMEDIATE),
    ];
    let mut weights = Vec::with_capacity(LAYERS * shapes.len());
    for _ in 0..LAYERS {
        for &(out, input) in &shapes {
            weights.push(Tensor::randn(0f32, 1.0, (out, input), &cpu)?);
        }
    }
    let x_hidden = Tensor::randn(0f32, 1.0, (tokens, HIDDEN), &cpu)?;
    let x_wide = Tensor::randn(0f32, 1.0, (tokens, INTERMEDIATE), &cpu)?;
    let bytes: usize = weights.iter().map(|w| w.elem_count() * 4).sum();
    let seconds = best_of(20, || {
        let mut last = None;
        for w in &weights {
            let x = if w.dims()[1] == HIDDEN {
                &x_hidden
            } else {
                &x_wide
            };
            last = Some(x.matmul(&w.t()?)?);
        }
        Ok(last.expect("36 layers"))
    })?;
    println!(
        "the {} linear layers, {:.1} MB of weights read once: {:.2} ms",
        weights.len(),
        bytes as f64 / 1e6,
        seconds * 1e3
    );
    Ok(())
}
