//! BERT's activation, GELU with the error function, computed a vector of numbers at a time.
//!
//! `gelu(x) = x · Φ(x) = 0.5 · x · (1 + erf(x / √2))`, as candle's `gelu_erf` computes it, but
//! with an error function that the compiler turns into vector instructions: candle's calls
//! libm's `erff` on one number at a time, which took a fifth of the time of embedding a catalog
//! and a tenth of embedding one message (BENCHMARKS-LOG.md, "The embedder").
//!
//! [`erf`] is a rational function fitted to the error function (`scripts/fit_erf.py` refits
//! it), within 4 × 10⁻⁷ of it over every f32 (the tests check a dense grid against libm's
//! erf in f64): a few f32 rounding steps near ±1, where libm's `erff` is within one. The
//! embedder's parity tests hold their tolerances with it.

use candle_core::{CpuStorage, CustomOp1, Layout, Result, Shape, Tensor};

/// Beyond this magnitude erf rounds to ±1 in f32 (1 − erf(3.92) ≈ 1.2 × 10⁻⁸).
const SATURATES: f32 = 3.92;

/// erf(x) ≈ x · P(x²) / Q(x²) on [−3.92, 3.92], coefficients lowest degree first, fitted in
/// f64 by iteratively reweighted least squares towards the smallest largest error (1.6 × 10⁻⁸
/// before rounding to f32): `scripts/fit_erf.py`. P's constant term is erf's slope at 0, 2/√π,
/// to within two f32 steps: the fit trades those for a smaller error elsewhere.
#[allow(clippy::approx_constant)]
const P: [f32; 6] = [
    1.128_379,
    0.192_745_94,
    0.053_058_118,
    0.003_867_561_2,
    0.000_287_463_66,
    2.034_889_8e-6,
];
const Q: [f32; 6] = [
    1.0,
    0.504_148_3,
    0.115_077_16,
    0.015_170_76,
    0.001_187_932_3,
    3.807_143_4e-5,
];

/// The error function of `x`, within 4 × 10⁻⁷: only arithmetic, a clamp and a sign, so a loop
/// over a slice of it is vectorised. A NaN gives ±1 (GELU's product with `x` keeps the NaN).
pub(super) fn erf(x: f32) -> f32 {
    let a = x.abs().min(SATURATES);
    let t = a * a;
    let p = ((((P[5] * t + P[4]) * t + P[3]) * t + P[2]) * t + P[1]) * t + P[0];
    let q = ((((Q[5] * t + Q[4]) * t + Q[3]) * t + Q[2]) * t + Q[1]) * t + Q[0];
    (a * p / q).min(1.0).copysign(x)
}

/// GELU with the error function: `0.5 · x · (1 + erf(x / √2))`.
pub(super) fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// [`gelu`] over every number of an f32 tensor, as a candle operation (no gradient: inference
/// only). The result is a new contiguous tensor of the same shape; [`Gelu::forward`] applies it.
pub(super) struct Gelu;

impl Gelu {
    /// `xs` with [`gelu`] applied to each number (a view is laid out contiguously first).
    pub(super) fn forward(xs: &Tensor) -> Result<Tensor> {
        xs.contiguous()?.apply_op1_no_bwd(&Gelu)
    }
}

impl CustomOp1 for Gelu {
    fn name(&self) -> &'static str {
        "gelu-erf-vectorised"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> Result<(CpuStorage, Shape)> {
        let CpuStorage::F32(data) = storage else {
            candle_core::bail!("gelu: f32 tensors only");
        };
        let Some(numbers) = layout
            .contiguous_offsets()
            .and_then(|(start, end)| data.get(start..end))
        else {
            candle_core::bail!("gelu: a contiguous tensor only (Gelu::forward lays it out)");
        };
        let values = numbers.iter().map(|&x| gelu(x)).collect();
        Ok((CpuStorage::F32(values), layout.shape().clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::cpu::erf::erf_f64;
    use candle_core::{DType, Device};

    /// About every thousandth f32 from −5 to 5, and the ends of the fit, against libm's erf in
    /// f64.
    #[test]
    fn erf_is_within_4e_7_of_the_error_function() {
        let mut worst = (0.0f64, 0.0f32);
        let mut x = -5.0f32;
        while x <= 5.0 {
            let error = (f64::from(erf(x)) - erf_f64(f64::from(x))).abs();
            if error > worst.0 {
                worst = (error, x);
            }
            // Steps of about a thousand representable numbers, dense near zero as f32 is.
            let step = (x.abs() * 1e-4).max(1e-6);
            x += step;
        }
        assert!(worst.0 < 4e-7, "erf({}) is {} off", worst.1, worst.0);
        for x in [
            0.0f32,
            -0.0,
            3.919_999_8,
            3.92,
            100.0,
            f32::MAX,
            f32::INFINITY,
        ] {
            assert!(
                (f64::from(erf(x)) - erf_f64(f64::from(x))).abs() < 4e-7,
                "{x}"
            );
            assert_eq!(erf(-x), -erf(x), "odd at {x}");
        }
        assert!(gelu(f32::NAN).is_nan());
    }

    #[test]
    fn gelu_is_within_a_few_f32_steps_of_the_exact_one() {
        let mut x = -12.0f32;
        while x <= 12.0 {
            let exact = 0.5 * f64::from(x) * (1.0 + erf_f64(f64::from(x) / 2f64.sqrt()));
            let error = (f64::from(gelu(x)) - exact).abs();
            // erf's error times x / 2, and a rounding step or two of the result.
            let bound = 2e-7 * f64::from(x.abs()) + 4.0 * f64::from(f32::EPSILON) * exact.abs();
            assert!(error <= bound + 1e-30, "gelu({x}) = {} vs {exact}", gelu(x));
            x += 1e-3;
        }
    }

    #[test]
    fn the_tensor_operation_applies_gelu_to_every_number_in_order() -> Result<()> {
        let values: Vec<f32> = (0..24).map(|i| i as f32 * 0.37 - 4.0).collect();
        let xs = Tensor::from_vec(values.clone(), (4, 6), &Device::Cpu)?;
        let want: Vec<f32> = values.iter().map(|&x| gelu(x)).collect();
        assert_eq!(Gelu::forward(&xs)?.flatten_all()?.to_vec1::<f32>()?, want);
        // A transposed view is laid out first, so its numbers come in the view's order.
        let transposed = Gelu::forward(&xs.t()?)?;
        let want_t = xs.t()?.contiguous()?.flatten_all()?.to_vec1::<f32>()?;
        let want_t: Vec<f32> = want_t.iter().map(|&x| gelu(x)).collect();
        assert_eq!(transposed.dims(), [6, 4]);
        assert_eq!(transposed.flatten_all()?.to_vec1::<f32>()?, want_t);
        // candle's own, libm's erf a number at a time, agrees to a few f32 steps.
        let candle = xs.gelu_erf()?.flatten_all()?.to_vec1::<f32>()?;
        for ((ours, theirs), x) in want.iter().zip(&candle).zip(&values) {
            assert!((ours - theirs).abs() <= 1e-6 * x.abs().max(1.0), "{x}");
        }
        // Anything but f32 is an error, not a panic.
        assert!(Gelu::forward(&xs.to_dtype(DType::F64)?).is_err());
        Ok(())
    }
}
