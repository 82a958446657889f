//! Secure CKKS ↔ MPC conversion (BLB §6.3, Alg. 1–2, App. A, C.3–C.4; REFERENCE.md §5.3–5.4).
//!
//! Roles: the client (P1 here, BLB's "P0") owns the CKKS secret key; the server (P0 here, BLB's
//! "P1") holds the ciphertexts. Shares in and out are this crate's usual `Z_{2^l}` fixed-point
//! shares (`l <= 64`, `f` fractional bits); inside, everything runs on `Z_{2^128}` shares.
//!
//! **CKKS → MPC** (Alg. 1): the server re-randomises the ciphertext with a fresh public-key
//! encryption of zero, adds a mask `r̂` drawn uniformly from `R_q` (not an encoded vector: that
//! is MP2ML's flaw, §6.2), and sends it; its share of the coefficients is `−r̂`. The client
//! decrypts to `Encode(x)·Δ + e + r̂`. Field → ring gives `Z_{2^128}` shares of the centred
//! coefficients ([`FieldToRing`]); each party then decodes locally ([`decode_local`]).
//! *Deviation*: Alg. 1 only adds `r̂`, which leaves `c1` — a function of the client's own
//! encryptions and the server's weights — in the client's hands; we re-randomise `c1` (standard
//! for ciphertexts returned to a key owner; BumbleBee's H2A does the same).
//!
//! **MPC → CKKS** (Alg. 2): each party extends its share to `Z_{2^128}` (one wide COT per
//! value), encodes locally ([`encode_local`]), the shares are re-randomised with a zero-sharing,
//! converted ring → field per RNS prime with 40 bits of slack (App. C.3), the client encrypts its
//! share and the server adds its own as a plaintext.

use crate::share_codec::ShareCodec;
use crate::LinearError;
use nectar_mpc::field_ring::{mask128, trunc_local, STAT_SLACK_BITS};
use nectar_net::Role;

/// Fixed-point formats of the local encode / decode (AGREEMENT: both parties use the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvFormat {
    /// MPC ring width `l` of the shares in and out (`<= 64`).
    pub l: u32,
    /// Fractional bits `f` of the MPC shares.
    pub f: u32,
    /// Fractional bits `F` of the working scale inside the FFT (`F >= f`).
    pub work_f: u32,
    /// Twiddle precision `τ` of [`ShareCodec`].
    pub tau: u32,
    /// Bound on the magnitude of the converted values: `|x| < 2^value_bits` (AGREEMENT; it
    /// sizes the statistical slack).
    pub value_bits: u32,
}

impl ConvFormat {
    /// BumbleBee's `(64, 18)` shares; `F = 30`: the decode's stochastic-rounding errors add like
    /// a random walk over `N log N` butterflies (about `2^8` units for `N = 2^15`), leaving
    /// `F − 8 − f = 4` guard bits; `τ = 28` twiddles (relative error `log N · 2^−28`);
    /// values `|x| < 2^12`.
    pub const DEFAULT: ConvFormat = ConvFormat { l: 64, f: 18, work_f: 30, tau: 28, value_bits: 12 };

    /// Checks the widths: every intermediate of the local FFT stays below
    /// `2^(127 − 40)` ([`ShareCodec::MAX_VALUE_BITS`]) for ring degree `n`.
    pub fn check(&self, n: usize) -> Result<(), LinearError> {
        let log_n = n.trailing_zeros();
        let peak = self.value_bits + self.work_f + self.tau + log_n + 1;
        if self.l > 64 || self.f > self.work_f || self.f + 2 >= self.l || peak > ShareCodec::MAX_VALUE_BITS {
            return Err(LinearError::BadParams(format!(
                "conversion format {self:?}: FFT intermediates reach 2^{peak} (limit 2^{} for {STAT_SLACK_BITS}-bit slack)",
                ShareCodec::MAX_VALUE_BITS
            )));
        }
        Ok(())
    }
}

/// `x·to/from` on `Z_{2^128}` shares: with `to/from = ρ·2^k`, `ρ ∈ [1, 2)`, a truncation by
/// `−k` first when scaling down, a 32-bit fixed-point multiplier for `ρ` (relative error
/// `≤ 2^−32`; skipped when `ρ = 1`), a left shift by `k` last when scaling up. Stochastic
/// rounding throughout; intermediates stay within a factor 4 of the larger of the two scales.
pub fn change_scale(x: &mut [u128], from: f64, to: f64, role: Role) -> Result<(), LinearError> {
    if !(from > 0.0 && to > 0.0 && from.is_finite() && to.is_finite()) {
        return Err(LinearError::BadParams(format!("scale change {from} -> {to}")));
    }
    let ratio = to / from;
    let k = ratio.log2().floor();
    if k.abs() > 120.0 {
        return Err(LinearError::BadParams(format!("scale ratio {ratio} out of range")));
    }
    let k = k as i32;
    let rho = ratio / 2f64.powi(k);
    if k < 0 {
        trunc_local(x, 128, (-k) as u32, role)?;
    }
    if rho != 1.0 {
        let mult = (rho * 2f64.powi(32)).round() as u128;
        x.iter_mut().for_each(|v| *v = v.wrapping_mul(mult));
        trunc_local(x, 128, 32, role)?;
    }
    if k > 0 {
        x.iter_mut().for_each(|v| *v <<= k as u32);
    }
    Ok(())
}

/// Local half of Alg. 1 step 4: `Z_{2^128}` shares of the `N` centred coefficients (scale
/// `ct_scale`) → `Z_{2^l}` shares of the first `count` real slots in `(l, f)`.
pub fn decode_local(
    codec: &ShareCodec,
    fmt: &ConvFormat,
    mut coeffs: Vec<u128>,
    ct_scale: f64,
    count: usize,
    role: Role,
) -> Result<Vec<u64>, LinearError> {
    fmt.check(codec.n())?;
    if count > codec.n() / 2 {
        return Err(LinearError::BadShape(format!("{count} values from {} slots", codec.n() / 2)));
    }
    change_scale(&mut coeffs, ct_scale, (fmt.work_f as f64).exp2(), role)?;
    let mut slots = codec.decode(&coeffs, role)?;
    slots.truncate(count);
    trunc_local(&mut slots, 128, fmt.work_f - fmt.f, role)?;
    let ml = mask128(fmt.l)?;
    Ok(slots.into_iter().map(|v| (v & ml) as u64).collect())
}

/// Local half of Alg. 2 step 1: `Z_{2^128}` shares of up to `N/2` real slot values in
/// fixed point with `f` bits → `Z_{2^128}` shares of the `N` coefficients of their encoding
/// at scale `scale` (zero-padded slots).
pub fn encode_local(
    codec: &ShareCodec,
    fmt: &ConvFormat,
    values: &[u128],
    scale: f64,
    role: Role,
) -> Result<Vec<u128>, LinearError> {
    fmt.check(codec.n())?;
    if values.len() > codec.n() / 2 {
        return Err(LinearError::BadShape(format!("{} values into {} slots", values.len(), codec.n() / 2)));
    }
    let mut slots = values.to_vec();
    slots.resize(codec.n() / 2, 0);
    change_scale(&mut slots, (fmt.f as f64).exp2(), (fmt.work_f as f64).exp2(), role)?;
    let mut coeffs = codec.encode(&slots, role)?;
    change_scale(&mut coeffs, (fmt.work_f as f64).exp2(), scale, role)?;
    Ok(coeffs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_math::Prg;

    fn split(v: &[i128], prg: &mut Prg) -> (Vec<u128>, Vec<u128>) {
        let a: Vec<u128> = v.iter().map(|_| prg.next_u128()).collect();
        let b = v.iter().zip(&a).map(|(&x, &r)| (x as u128).wrapping_sub(r)).collect();
        (a, b)
    }

    #[test]
    fn scale_changes_are_accurate() {
        let mut prg = Prg::new([7; 16]);
        let vals: Vec<i128> = (0..500).map(|i| ((i as i128) - 250) << 40).collect();
        for (from, to) in [(2f64.powi(40), 2f64.powi(30)), (2f64.powi(40), 2f64.powi(45)), (1.1e12, 2f64.powi(30)), (2f64.powi(30), 3.3e13)] {
            let (mut a, mut b) = split(&vals, &mut prg);
            change_scale(&mut a, from, to, Role::Server).unwrap();
            change_scale(&mut b, from, to, Role::Client).unwrap();
            for i in 0..vals.len() {
                let got = a[i].wrapping_add(b[i]) as i128 as f64;
                let want = vals[i] as f64 * to / from;
                assert!((got - want).abs() <= 2.0 * (to / from).max(1.0) + want.abs() * 2f64.powi(-31), "{from}->{to} i={i} got={got} want={want}");
            }
        }
    }

    #[test]
    fn encode_then_decode_locally_returns_the_values() {
        let n = 4096;
        let codec = ShareCodec::new(n, ConvFormat::DEFAULT.tau).unwrap();
        let fmt = ConvFormat::DEFAULT;
        let mut prg = Prg::new([8; 16]);
        let xs: Vec<f64> = (0..n / 2).map(|i| ((i * 37 % 1001) as f64 - 500.0) / 61.0).collect();
        let fx: Vec<i128> = xs.iter().map(|&x| (x * (fmt.f as f64).exp2()).round() as i128).collect();
        let (a, b) = split(&fx, &mut prg);
        let scale = 2f64.powi(40);
        let ca = encode_local(&codec, &fmt, &a, scale, Role::Server).unwrap();
        let cb = encode_local(&codec, &fmt, &b, scale, Role::Client).unwrap();
        let da = decode_local(&codec, &fmt, ca, scale, n / 2, Role::Server).unwrap();
        let db = decode_local(&codec, &fmt, cb, scale, n / 2, Role::Client).unwrap();
        let ulp = (-(fmt.f as f64)).exp2();
        let mut max = 0f64;
        for i in 0..n / 2 {
            let got = da[i].wrapping_add(db[i]) as i64 as f64 * ulp;
            max = max.max((got - xs[i]).abs());
        }
        // A few units of 2^-18 (the fixed-point input's own rounding plus the two FFTs).
        assert!(max < 8.0 * ulp, "max error {max}");
    }

    #[test]
    fn too_wide_formats_are_refused() {
        let mut f = ConvFormat::DEFAULT;
        assert!(f.check(32768).is_ok());
        f.value_bits = 30;
        assert!(f.check(32768).is_err());
    }
}
