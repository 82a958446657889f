//! What the `|x|`-form activations ([`super::p7`], [`super::sq8`], [`super::nimbus`],
//! [`crate::silu::nimbus`]) share: `f(x) = ReLU(x) − g(|x|)` (GeLU and SiLU are both of this
//! form, `g(t) = t − f(t)`) with `Q ≈ g` evaluated in `Z_{2^45}` in the centred variable
//! `w = |x|/R − 1/2`.

use crate::backend::{enc, enc_scaled, Backend};
use crate::poly::LessMode;
use crate::NnError;
use nectar_math::FixedPoint;

/// Ring of [`super::p7_gelu`]'s polynomial: `Q` runs in `Z_{2^45}`, the widest ring the 2-prime bOLEe
/// key set serves ([`crate::secure::NARROW_MAX_L`]), so its four products cost 2/3 of the full
/// ring's (2 ciphertexts per query and response instead of 3).
pub const P7_POLY_BITS: u32 = crate::secure::NARROW_MAX_L;

/// Scale of `w = t/r − 1/2 ∈ [−1/2, 1/2]` and of its powers in [`super::p7_gelu`]: `w²` before its
/// truncation is `≤ 0.27·2^44 < 2^43` (the truncation's domain in `Z_{2^45}`).
pub(crate) const P7_G: u32 = 22;

/// Checks of the `|x|`-form GeLUs ([`super::p7_gelu`], [`super::sq8_gelu`]) in format `fp`: a power-of-two
/// range `r` with `f + log2 r ≤ P7_G` and a ring wider than [`P7_POLY_BITS`]. Returns
/// `P7_G − f − log2 r`, the shift taking `t = |x|` at scale f to `t/r` at scale `P7_G`.
pub(crate) fn abs_form_shift(op: &'static str, fp: FixedPoint, range: f64) -> Result<u32, NnError> {
    let f = fp.f();
    let rho = range.log2();
    let narrow = |why: String| NnError::FormatTooNarrow { op, l: fp.l(), f, why };
    if rho.fract() != 0.0 || rho < 0.0 || f + rho as u32 > P7_G {
        return Err(narrow(format!("needs a power-of-two range r (got {range}) with f + log2 r <= {P7_G}")));
    }
    if fp.l() <= P7_POLY_BITS {
        return Err(narrow(format!("Q runs in Z_2^{P7_POLY_BITS}, so the format must be wider")));
    }
    Ok(P7_G - f - rho as u32)
}

/// `w = t/r − 1/2` at scale `P7_G` (the backend in `(P7_POLY_BITS, P7_G)`): `t`'s raw value
/// times `2^shift` ([`abs_form_shift`]), minus `2^(P7_G − 1)`. Local and exact.
pub(crate) fn centred_w<B: Backend + ?Sized>(b: &mut B, tn: &B::Val, shift: u32) -> Result<B::Val, NnError> {
    let w = b.mul_const(tn, &[1u64 << shift], 0)?;
    b.add_const(&w, &[enc(b, -0.5)?])
}

/// The `|x|` form's skeleton: `ReLU(x) − 1{|x| < r}·Q(w)` with `w = t·2^shift/2^P7_G − 1/2`
/// ([`centred_w`], `t = |x|`). One comparison of `x` against `−r, 0, r` in `Z_{2^cmp_bits}`
/// (shares reduced locally, [`crate::poly::less_than_in_ring`]): `1{x < −r}`, the sign
/// `s = 1{x < 0}` (then `t` and `ReLU(x)` from one mux) and `1{x < r}`, whence
/// `z = 1{−r ≤ x < r}` by XOR (the bits are monotone). `q(b, w, f)` evaluates `Q` in
/// `(P7_POLY_BITS, P7_G)` and returns it at scale `f`; its selection `mux(z, Q)` runs there too,
/// then the extension back and `ReLU(x) − ·`. The backend's format is restored on every path.
pub(crate) fn abs_form_eval<B, Q>(b: &mut B, x: &B::Val, cmp_bits: u32, r: f64, shift: u32, less: LessMode, q: Q) -> Result<B::Val, NnError>
where
    B: Backend + ?Sized,
    Q: FnOnce(&mut B, &B::Val, u32) -> Result<B::Val, NnError>,
{
    let fp = b.format();
    let f = fp.f();
    let n = b.len(x);
    let bits = crate::poly::less_than_in_ring(b, x, cmp_bits, &[-r, 0.0, r], less)?;
    let (below, s, inside_hi) = match bits.as_slice() {
        [a, c, d] if [a, c, d].iter().all(|v| b.bit_len(v) == n) => (a, c, d),
        _ => return Err(NnError::BadArgument("expected three comparison bit vectors".into())),
    };
    let z = b.xor(inside_hi, below)?; // |x| < r (at x = −r: inside, Q(r) is in the fit's range)
    let neg = b.mux(s, x)?; // x where x < 0
    let relu = b.sub(x, &neg)?;
    let t = b.sub(&relu, &neg)?; // |x|
    let tn = b.reduce(&t, P7_POLY_BITS)?;
    let at = |s: u32| FixedPoint::new(P7_POLY_BITS, s);
    let run = |b: &mut B| -> Result<B::Val, NnError> {
        b.set_format(at(P7_G)?);
        let w = centred_w(b, &tn, shift)?;
        let qv = q(b, &w, f)?;
        b.set_format(at(f)?);
        let qz = b.mux(&z, &qv)?;
        crate::mixed::leave(b, &qz, fp)
    };
    let qz = run(b);
    b.set_format(fp);
    b.sub(&relu, &qz?)
}

/// Scale the affine combinations of the squaring chains ([`chain_affine`]) are summed at before
/// their one truncation (`|u| ≤ 0.68`, `|Q| < 1`: below `2^43`).
const CHAIN_S: u32 = 43;

/// `Σ c_k · v_k + c0` for values `v_k` at scale [`P7_G`] in `Z_2^45`: summed at [`CHAIN_S`]
/// (local products by public constants), then one truncation to `out` (≤ 1 LSB).
pub(crate) fn chain_affine<B: Backend + ?Sized>(b: &mut B, terms: &[(&B::Val, f64)], c0: f64, out: u32) -> Result<B::Val, NnError> {
    let mut acc: Option<B::Val> = None;
    for &(v, c) in terms {
        let term = b.mul_const(v, &[enc_scaled(b, c, CHAIN_S - P7_G)?], 0)?;
        acc = Some(match acc {
            Some(a) => b.add(&a, &term)?,
            None => term,
        });
    }
    let acc = acc.ok_or_else(|| NnError::BadArgument("chain: empty combination".into()))?;
    let acc = b.add_const(&acc, &[enc_scaled(b, c0, CHAIN_S)?])?;
    b.trunc(&acc, CHAIN_S - out)
}

/// The two-squaring chain `c = [a1, b1, c1, k2, k1, kw, k0]` at `w` in f64:
/// `p1 = w², u = a1·p1 + b1·w + c1, k2·u² + k1·p1 + kw·w + k0` (any quartic in `w`,
/// [`crate::fit_dist::chain_of_quartic`]).
pub fn chain_f64(c: &[f64; 7], w: f64) -> f64 {
    let [a1, b1, c1, k2, k1, kw, k0] = *c;
    let p1 = w * w;
    let u = a1 * p1 + b1 * w + c1;
    k2 * u * u + k1 * p1 + kw * w + k0
}

/// Largest `|u|` of the chain `c` on `w ∈ [lo, hi]` (4097 points).
pub fn chain_u_max(c: &[f64; 7], lo: f64, hi: f64) -> f64 {
    let [a1, b1, c1, ..] = *c;
    (0..=4096)
        .map(|i| {
            let w = lo + (hi - lo) * i as f64 / 4096.0;
            (a1 * w * w + b1 * w + c1).abs()
        })
        .fold(0.0, f64::max)
}

/// Twin-vs-protocol bound of the chain's output at scale `out`, in its LSB, as for `sq8`: each
/// square is within 2 LSB_22 (its product's {0, ±1} and its truncation's 1), each affine sum
/// adds one truncation: `p1` 2, `u` `|a1|·2 + 1`, `u²` `2|u|·e_u + 2`, then the output
/// `(|k2|·e_u² + |k1|·2)/2^(22 − out) + 1` (`w` itself is exact).
pub fn chain_tol(c: &[f64; 7], u_max: f64, out: u32) -> f64 {
    let [a1, _, _, k2, k1, ..] = *c;
    let e_u = a1.abs() * 2.0 + 1.0;
    let e_p2 = 2.0 * u_max * e_u + 2.0;
    (k2.abs() * e_p2 + k1.abs() * 2.0) / (P7_G as f64 - out as f64).exp2() + 1.0
}

/// The chain `c` on shares: `w` at scale [`P7_G`] in the current ring (at least 45 bits), two
/// squares and two truncated affine sums, the result at scale `out`.
pub(crate) fn chain_eval<B: Backend + ?Sized>(b: &mut B, w: &B::Val, c: &[f64; 7], out: u32) -> Result<B::Val, NnError> {
    let [a1, b1, c1, k2, k1, kw, k0] = *c;
    let p1 = b.square(w)?;
    let u = chain_affine(b, &[(&p1, a1), (w, b1)], c1, P7_G)?;
    let p2 = b.square(&u)?;
    chain_affine(b, &[(&p2, k2), (&p1, k1), (w, kw)], k0, out)
}

/// A quartic `|x|`-form from two squarings, its coefficients fitted to an activation's input
/// distribution (Nimbus §4; `nectar fit --model`, [`crate::fit_dist`]; AGREEMENT):
///
/// ```text
/// w = |x|/R − 1/2,  p1 = w²,  u = a1·p1 + b1·w + c1,  Q = k2·u² + k1·p1 + kw·w + k0
/// f(x) = ReLU(x) − Q  on −r ≤ x < r,  ReLU(x) beyond
/// ```
///
/// Any quartic in `w` is of this form (`u` carries the `w⁴` and `w³` terms); the fitter scales
/// `u` to `|u| ≤ 0.6` on the fitted range so `u²` stays inside `Z_2^45`'s truncation domain.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct AbsChain {
    /// `[a1, b1, c1, k2, k1, kw, k0]`.
    pub c: [f64; 7],
    /// The threshold `r`: `Q` is selected on `|x| < r`.
    pub range: f64,
    /// `R`, the power of two `≥ r` of `w`'s normalisation.
    pub scale: f64,
    pub less: LessMode,
}

impl AbsChain {
    /// `Q(w)` in f64 (the approximation alone).
    pub fn q_f64(&self, w: f64) -> f64 {
        chain_f64(&self.c, w)
    }

    /// `f(x)` in f64 as the protocol computes it (exact comparisons).
    pub fn eval_f64(&self, x: f64) -> f64 {
        let relu = x.max(0.0);
        if -self.range <= x && x < self.range {
            relu - self.q_f64(x.abs() / self.scale - 0.5)
        } else {
            relu
        }
    }

    /// Largest `|u|` on `w ∈ [−1/2, r/R − 1/2]`.
    pub fn u_max(&self) -> f64 {
        chain_u_max(&self.c, -0.5, self.range / self.scale - 0.5)
    }

    /// Twin-vs-protocol bound in LSB of the output at `f` fractional bits: [`chain_tol`]
    /// rounded up, + 1 for the coefficients' encoding (the mux and the extension are exact).
    pub fn tolerance(&self, f: u32) -> i64 {
        chain_tol(&self.c, self.u_max(), f).ceil() as i64 + 1
    }
}

/// The [`AbsChain`] form in the current format: [`abs_form_eval`] with `Q` from two squares,
/// the comparison in `Z_{2^cmp_bits}`. Cost: one three-threshold comparison, two muxes, two
/// squares (2 bOLEe queries, 2 responses), two truncations of the affine sums and the
/// extension — one square and one truncation fewer than `sq8`.
pub fn abs_chain<B: Backend + ?Sized>(b: &mut B, x: &B::Val, p: &AbsChain, cmp_bits: u32, op: &'static str) -> Result<B::Val, NnError> {
    let shift = abs_form_shift(op, b.format(), p.scale)?;
    abs_form_eval(b, x, cmp_bits, p.range, shift, p.less, |b, w, f| chain_eval(b, w, &p.c, f))
}
