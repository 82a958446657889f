//! `gelu = p7`: `ReLU(x) − Q(|x|)` with `Q` of degree 7 fitted to the checkpoint's GeLU form,
//! evaluated in `Z_{2^45}` (nectar, issue 17).

use super::abs_form::{abs_form_shift, centred_w, P7_G, P7_POLY_BITS};
use super::{by_form, GeluForm, GeluProtocol};
use crate::backend::{enc_scaled, Backend, DynBackend};
use crate::mixed::ActRing;
use crate::poly::{take3, LessMode, BUMBLEBEE_LESS};
use crate::NnError;
use nectar_math::registry::Protocol;
use nectar_math::FixedPoint;

/// The `p7` GeLU (nectar, issue 17 item 1). `GeLU(x) = x·S(x)` with `S(x) + S(−x) = 1` (`S = Φ`
/// for the erf form, `(1 + tanh(…))/2` for GPT-2's), so `GeLU(x) = ReLU(x) − g(|x|)` with
/// `g(t) = t − GeLU(t) = t·S(−t)`, analytic and decaying to 0 (`g(4) = 1.3e−4`). `p7` evaluates
/// `ReLU(x) − Q(|x|)` on `|x| < r` and `ReLU(x)` outside, `Q` a degree-7 minimax fit of `g` on
/// `[−0.07, r + 0.07]`, `r = 4`: max error 2.4e−4 (erf form), 2.3e−4 (tanh form) on the real
/// line, vs Seg4's 1.5e−2 (3.3e−2 off the erf form). Because `g` is analytic, a wrong sign
/// from the approximate comparison near 0 (it ignores the bits below 2^−4) still gives
/// `ReLU(x) − g(|x|) = GeLU(x)`: the fit extends past 0 for that. Coefficients:
/// `scripts/fit_gelu_abs.py 7 4.0` (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct AbsPolyParams {
    /// `c0..c7` of `Q(t) = Σ c_k t^k`.
    pub c: [f64; 8],
    /// Range `r`.
    pub range: f64,
    pub less: LessMode,
}

/// `p7` for the erf GeLU (BERT, ViT: `hidden_act = "gelu"`).
#[allow(clippy::excessive_precision)] // the fit's digits, verbatim
pub const P7_ERF: AbsPolyParams = AbsPolyParams {
    c: [
        -1.13343634985068177e-04,
        5.02103443123945059e-01,
        -3.96636467032915885e-01,
        -3.41981028573490956e-02,
        1.33707902318160571e-01,
        -5.51963131862335601e-02,
        9.47420818414095034e-03,
        -6.09603296292709020e-04,
    ],
    range: 4.0,
    less: BUMBLEBEE_LESS,
};

/// `p7` for GPT-2's `gelu_new` (tanh form).
#[allow(clippy::excessive_precision)] // the fit's digits, verbatim
pub const P7_TANH: AbsPolyParams = AbsPolyParams {
    c: [
        -9.34749210462791147e-05,
        5.02132291091130223e-01,
        -3.97950148859479436e-01,
        -3.04530070181622953e-02,
        1.30239442134269995e-01,
        -5.37886025278662278e-02,
        9.21167700207162904e-03,
        -5.91116186229477189e-04,
    ],
    range: 4.0,
    less: BUMBLEBEE_LESS,
};

/// Ring width of [`p7_gelu`]'s comparisons: `x` is reduced to `Z_{2^40}` (local) before its
/// three-threshold comparison, which then compares 40 − 2 − (f − 4) bits instead of 64 − 2 −
/// (f − 4): 84 instead of 176 bytes per element (`nectar bench nn --op less3 --bits 40|64
/// --shift 14`). The input domain is `|x| < 2^(40 − 2 − f)` = 2^20 at f = 18 (a million; GeLU
/// inputs of real checkpoints are below 10^3).
pub const P7_CMP_BITS: u32 = 40;

/// Scale `B(w)` is summed at (`|B| ≤ 7 < 2^3`: `< 2^42`), then truncated to `P7_G − 1`, so that
/// `w⁴·B` (`≤ 0.43`) before its truncation is `< 2^42`.
const P7_SB: u32 = 39;
/// Scale `A(w) + w⁴·B(w)` is summed at (`|A|, |w⁴B| ≤ 0.43`: `< 2^42`).
const P7_SA: u32 = 43;

/// `Q`'s coefficients in `w = t/r − 1/2` (`t = r·(w + 1/2)`):
/// `e_k = Σ_{j ≥ k} c_j · C(j, k) · r^j · 2^(k − j)`. With them `|A(w)| ≤ 0.43`, `|B(w)| ≤ 7` and
/// `|w⁴B(w)| ≤ 0.43` on `w ∈ [−1/2, 1/2 + 2^−6]` for both fits (tested), where in `t` the two
/// halves of Paterson–Stockmeyer reach 34 and cancel to `|Q| ≤ 0.17`.
pub fn p7_w_coefficients(p: &AbsPolyParams) -> [f64; 8] {
    let binom = |j: usize, k: usize| (0..k).fold(1.0, |acc, i| acc * (j - i) as f64 / (i + 1) as f64);
    let mut e = [0.0; 8];
    for (k, ek) in e.iter_mut().enumerate() {
        *ek = (k..8).map(|j| p.c[j] * binom(j, k) * p.range.powi(j as i32) * 0.5f64.powi((j - k) as i32)).sum();
    }
    e
}

/// The `p7` GeLU in the current format. `t = |x|` and `ReLU(x)` from one mux; `Q(t)` in
/// `Z_{2^45}` ([`P7_POLY_BITS`]; `t` enters by local reduction) in the variable
/// `w = t/r − 1/2` (a local affine map of `t`'s shares: `r = 4 = 2^2`), by
/// Paterson–Stockmeyer `Q = A(w) + w⁴·B(w)`, `A`, `B` of degree 3 in the baby steps
/// `w, w², w³` ([`p7_w_coefficients`]): four products (`w² = sq(w)`, `w³ = w²·w`, `w⁴ = sq(w²)`,
/// `w⁴·B`; queries of `w`, `w²`, `w⁴`, `B`) on n elements instead of Seg4's five, at scale 22.
/// The selection `mux(|x| < r, Q)` runs in `Z_{2^45}` too; the result is extended back (App. E
/// Alg. 5) and subtracted from `ReLU(x)`.
/// Centring `t` at `r/2` keeps every term below 0.43 (in `t` the halves reach 34 and cancel),
/// so 45 bits hold `Q` to ≈ 1e−6, like the full ring. Needs `f + 2 ≤ 22` and a ring wider than
/// 45 bits (the full ring (64, 18), not (32, 12)).
/// Cost: one less_than on n × 3 in `Z_{2^40}` ([`P7_CMP_BITS`]), mux n (full ring), square 2n,
/// mul 2n (2-prime bOLEe), truncation 4n, mux n and extension n in `Z_{2^45}`.
pub fn p7_gelu<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &AbsPolyParams) -> Result<B::Val, NnError> {
    let fp = b.format();
    let f = fp.f();
    let shift = abs_form_shift("p7_gelu", fp, p.range)?;
    let n = b.len(x);
    // The comparisons in the smaller ring (shares reduced locally; the bits are ring-free).
    let bits = crate::poly::less_than_in_ring(b, x, P7_CMP_BITS, &[-p.range, 0.0, p.range], p.less);
    let [lo, s, hi] = take3(b, bits?, n)?;
    let neg = b.mux(&s, x)?; // x where x < 0
    let relu = b.sub(x, &neg)?;
    let t = b.sub(&relu, &neg)?; // |x|
    let z = b.xor(&lo, &hi)?; // −r ≤ x < r
    let tn = b.reduce(&t, P7_POLY_BITS)?;
    let e = p7_w_coefficients(p);
    let at = |s: u32| FixedPoint::new(P7_POLY_BITS, s);
    let run = |b: &mut B| -> Result<B::Val, NnError> {
        b.set_format(at(P7_G)?);
        let w = centred_w(b, &tn, shift)?;
        let w2 = b.square(&w)?;
        let w3 = b.mul(&w2, &w)?;
        let w4 = b.square(&w2)?;
        // Σ_{k=1..3} c_k w^k + c_0 at scale `sc` (local, exact).
        let cubic = |b: &mut B, c: &[f64], sc: u32| -> Result<B::Val, NnError> {
            let mut acc = b.mul_const(&w, &[enc_scaled(b, c[1], sc - P7_G)?], 0)?;
            for (pw, ck) in [(&w2, c[2]), (&w3, c[3])] {
                let term = b.mul_const(pw, &[enc_scaled(b, ck, sc - P7_G)?], 0)?;
                acc = b.add(&acc, &term)?;
            }
            b.add_const(&acc, &[enc_scaled(b, c[0], sc)?])
        };
        let bq = cubic(b, &e[4..8], P7_SB)?;
        let bq = b.trunc(&bq, P7_SB - (P7_G - 1))?; // B at scale G − 1
        let m = b.mul(&w4, &bq)?; // w⁴·B at scale G − 1
        let m = b.mul_const(&m, &[1u64 << (P7_SA - (P7_G - 1))], 0)?; // lifted to SA (exact)
        let a = cubic(b, &e[0..4], P7_SA)?;
        let q = b.add(&a, &m)?;
        let q = b.trunc(&q, P7_SA - f)?; // Q at scale f
        b.set_format(at(f)?);
        let qz = b.mux(&z, &q)?;
        crate::mixed::leave(b, &qz, fp)
    };
    let qz = run(b);
    b.set_format(fp);
    b.sub(&relu, &qz?)
}

/// P7 (`gelu=p7`, polynomial in `Z_2^45`) at f = 18, in LSB_22 of the powers of
/// `w = t/4 − 1/2` (t = |x| exact, from a mux; w exact, local): w² 2, w³ 2 + |w|·2 ≈ 3.1,
/// w⁴ 2 + 2w²·2 ≈ 3.1; B (at scale 21 after its truncation) |e6|·2 + |e7|·3.1 = 38 LSB_22 → 20
/// LSB_21; w⁴·B: 3.1·|B| (7) + w⁴ (0.073)·20 + 2 ≈ 25 LSB_21; A: |e2|·2 + |e3|·3.1 ≈ 4.4 LSB_21;
/// Q at scale 18: 29.5/8 + 1 (truncation) → 5 (the mux and the extension are exact).
pub const P7_TOL: i64 = 5;

/// Why the `|x|`-form GeLUs refuse the mixed activation ring.
pub(crate) const NO_MIXED: &str = "runs its polynomial in Z_2^45 itself, from the full ring; the activation format (32, 12) is narrower: use act-ring=full";

/// The protocol `gelu = p7` (a fit per form).
pub struct P7;

impl Protocol for P7 {
    fn name(&self) -> &'static str {
        "p7"
    }
    fn source(&self) -> &'static str {
        "nectar: ReLU(x) - Q(|x|), degree 7"
    }
    fn params(&self) -> serde_json::Value {
        serde_json::json!({ "erf": P7_ERF, "tanh": P7_TANH, "compare_ring": P7_CMP_BITS, "poly_ring": P7_POLY_BITS })
    }
}

impl GeluProtocol for P7 {
    fn eval(&self, b: &mut DynBackend<'_>, x: &Vec<u64>, form: GeluForm, ring: ActRing) -> Result<Vec<u64>, NnError> {
        self.supports(ring).map_err(NnError::BadArgument)?;
        p7_gelu(b, x, by_form(form, &P7_ERF, &P7_TANH))
    }
    fn supports(&self, ring: ActRing) -> Result<(), String> {
        ring.full_only("gelu=p7", NO_MIXED)
    }
    fn tolerance(&self, _form: GeluForm, _ring: ActRing) -> Result<i64, NnError> {
        Ok(P7_TOL)
    }
    /// The fits' 2.4e−4 (erf) and 2.3e−4 (tanh) on the real line, with the twin's rounding.
    fn approx_error(&self, _form: GeluForm, _ring: ActRing) -> Result<f64, NnError> {
        Ok(2.5e-4)
    }
    fn stated_accuracy(&self) -> &'static str {
        "— (nectar; fit 2.4e−4 erf, 2.3e−4 tanh)"
    }
    fn pivots(&self) -> Vec<f64> {
        vec![-P7_ERF.range, 0.0, P7_ERF.range]
    }
}
