//! CKKS encoding and decoding evaluated locally on additive shares in fixed point (BLB §6.3
//! "each party locally CKKS-decodes its coefficient share", App. C.4; REFERENCE.md §5.3).
//!
//! The canonical embedding is linear, so each party applies it to its own share. Slot `j`
//! (`j < N/2`) of a real polynomial `c(X)` is `z_j = c(ζ^(5^j))`, `ζ = e^(iπ/N)` — the slot
//! order in which the Galois element `5` rotates by one. With the twist `w_k = c_k·ζ^k`,
//! `z_j = Σ_k w_k ω^(t_j k)` is entry `t_j = (5^j − 1)/2 mod N` of the length-`N` DFT
//! (`ω = ζ²`); the conjugate evaluation `c(ζ^−(5^j))` is entry `N − 1 − t_j`. So
//! - **decode** = twist, radix-2 DFT, gather the `t_j`;
//! - **encode** = scatter `z_j` to `t_j` and `N − 1 − t_j` (real slots), inverse DFT (each
//!   butterfly level halves, giving the `1/N`), untwist and keep the real part.
//!
//! Arithmetic is on `Z_{2^128}` shares (wrapping `u128`) of fixed-point values; twiddles are
//! integers `round(2^τ·cos)`, `round(2^τ·sin)`, and every product is followed by a local
//! SecureML truncation ([`nectar_mpc::field_ring::trunc_local`]): unbiased stochastic rounding
//! (error `< 1` unit per step, adding like a random walk over the `N`-term sums), failure
//! probability `< |x|/2^127` per truncation — the caller keeps values below
//! `2^(127 − 40)` ([`ShareCodec::MAX_VALUE_BITS`]), BLB App. C.4's 40-bit slack.
//!
//! Both parties must use bit-identical twiddles (the shares are uniform over `Z_{2^128}`, so a
//! one-unit difference would destroy the result): the table is computed with IEEE-754 basic
//! operations only (octant reduction in integers and a Taylor series), never the platform's
//! `sin`/`cos`, so it is the same on every machine.

use crate::LinearError;
use nectar_mpc::field_ring::{trunc_local, STAT_SLACK_BITS};
use nectar_net::Role;

/// `(cos θ, sin θ)` for `θ = 2π·m/big_m`, `big_m` a power of two `>= 8`, from `+`, `−`, `×`
/// only (deterministic across platforms; max error ~1e−16).
pub fn det_cos_sin(m: u64, big_m: u64) -> (f64, f64) {
    let r = m % big_m;
    let quarter = big_m / 4;
    let (quad, rem) = (r / quarter, r % quarter);
    let unit = 2.0 * std::f64::consts::PI / big_m as f64;
    let (c, s) = if 2 * rem <= quarter {
        taylor_cos_sin(rem as f64 * unit)
    } else {
        let (c, s) = taylor_cos_sin((quarter - rem) as f64 * unit);
        (s, c)
    };
    match quad {
        0 => (c, s),
        1 => (-s, c),
        2 => (-c, -s),
        _ => (s, -c),
    }
}

/// Taylor series on `[0, π/4]` (terms to `x^23`: truncation error < 1e−20).
fn taylor_cos_sin(x: f64) -> (f64, f64) {
    let x2 = x * x;
    let (mut c, mut s) = (0.0f64, 0.0f64);
    let (mut tc, mut ts) = (1.0f64, x);
    for k in 0..12u32 {
        c += tc;
        s += ts;
        let a = (2 * k + 1) as f64;
        let b = (2 * k + 2) as f64;
        let d = (2 * k + 3) as f64;
        tc = -tc * x2 / (a * b);
        ts = -ts * x2 / (b * d);
    }
    (c, s)
}

/// The fixed-point canonical embedding on shares for ring degree `N`.
#[derive(Clone, Debug)]
pub struct ShareCodec {
    n: usize,
    tau: u32,
    /// `round(2^τ·e^(2πi·m/(2N)))` for `m ∈ [0, 2N)`: twists use `m = k`, DFT twiddles `m = 2j`.
    root_re: Vec<i128>,
    root_im: Vec<i128>,
    /// `t_j = (5^j − 1)/2 mod N` for `j < N/2`.
    slot_pos: Vec<usize>,
}

impl ShareCodec {
    /// Values the caller keeps below `2^MAX_VALUE_BITS` (in units of the working scale, after
    /// each product) so every local truncation fails with probability `< 2^−40`.
    pub const MAX_VALUE_BITS: u32 = 127 - STAT_SLACK_BITS;

    /// Codec for ring degree `n` (power of two, 8..=65536) with `tau`-bit twiddles (8..=50).
    pub fn new(n: usize, tau: u32) -> Result<Self, LinearError> {
        if !n.is_power_of_two() || !(8..=65536).contains(&n) || !(8..=50).contains(&tau) {
            return Err(LinearError::BadParams(format!("share codec for N = {n}, τ = {tau} not supported")));
        }
        let two_n = 2 * n as u64;
        let scale = (tau as f64).exp2();
        let (mut root_re, mut root_im) = (Vec::with_capacity(2 * n), Vec::with_capacity(2 * n));
        for m in 0..two_n {
            let (c, s) = det_cos_sin(m, two_n);
            root_re.push((c * scale).round() as i128);
            root_im.push((s * scale).round() as i128);
        }
        let mut slot_pos = Vec::with_capacity(n / 2);
        let mut g: u64 = 1;
        for _ in 0..n / 2 {
            slot_pos.push(((g - 1) / 2) as usize % n);
            g = g * 5 % two_n;
        }
        Ok(Self { n, tau, root_re, root_im, slot_pos })
    }

    /// Ring degree `N`.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Twiddle precision `τ` (bits).
    pub fn tau(&self) -> u32 {
        self.tau
    }

    /// `x·(a + ib)` truncated by `τ`, for a real share `x` and a root index.
    fn mul_root(&self, x: u128, m: usize, conj: bool, role: Role) -> Result<(u128, u128), LinearError> {
        let im = if conj { -self.root_im[m] } else { self.root_im[m] };
        let mut v = [x.wrapping_mul(self.root_re[m] as u128), x.wrapping_mul(im as u128)];
        trunc_local(&mut v, 128, self.tau, role)?;
        Ok((v[0], v[1]))
    }

    /// In-place radix-2 DFT on complex shares: `Z_t = Σ_k w_k ω^(±tk)`; with `inverse` (conjugate twiddles)
    /// every level divides by two (inverse DFT with its `1/N`).
    fn dft(&self, re: &mut [u128], im: &mut [u128], inverse: bool, role: Role) -> Result<(), LinearError> {
        let n = self.n;
        let bits = n.trailing_zeros();
        for i in 0..n {
            let j = i.reverse_bits() >> (usize::BITS - bits);
            if i < j {
                re.swap(i, j);
                im.swap(i, j);
            }
        }
        let tau = self.tau;
        let extra = inverse as u32;
        let mut len = 2;
        while len <= n {
            let half = len / 2;
            let step = 2 * n / len; // ω^(n/len) = root index 2·(n/len)
            for start in (0..n).step_by(len) {
                for k in 0..half {
                    let m = step * k;
                    let (wr, wi) = (self.root_re[m], if inverse { -self.root_im[m] } else { self.root_im[m] });
                    let (br, bi) = (re[start + k + half], im[start + k + half]);
                    let (ar, ai) = (re[start + k], im[start + k]);
                    // t = ω·b at scale 2^τ; outputs (a·2^τ ± t) / 2^(τ + extra).
                    let tr = br.wrapping_mul(wr as u128).wrapping_sub(bi.wrapping_mul(wi as u128));
                    let ti = br.wrapping_mul(wi as u128).wrapping_add(bi.wrapping_mul(wr as u128));
                    let (ar, ai) = (ar << tau, ai << tau);
                    let mut out = [ar.wrapping_add(tr), ai.wrapping_add(ti), ar.wrapping_sub(tr), ai.wrapping_sub(ti)];
                    trunc_local(&mut out, 128, tau + extra, role)?;
                    re[start + k] = out[0];
                    im[start + k] = out[1];
                    re[start + k + half] = out[2];
                    im[start + k + half] = out[3];
                }
            }
            len *= 2;
        }
        Ok(())
    }

    /// Decode: shares of the `N` coefficients (integers in the working scale) → shares of the
    /// real parts of the `N/2` slots, in the same scale. Values (and partial DFT sums, up to
    /// `N·max|c|`) must stay below `2^(MAX_VALUE_BITS − τ)`.
    pub fn decode(&self, coeffs: &[u128], role: Role) -> Result<Vec<u128>, LinearError> {
        Ok(self.decode_complex(coeffs, role)?.0)
    }

    /// Decode keeping both parts: shares of the real and of the imaginary parts of the `N/2`
    /// slots (same scale and bounds as [`Self::decode`]).
    pub fn decode_complex(&self, coeffs: &[u128], role: Role) -> Result<(Vec<u128>, Vec<u128>), LinearError> {
        if coeffs.len() != self.n {
            return Err(LinearError::BadParams(format!("decode of {} coefficients with N = {}", coeffs.len(), self.n)));
        }
        let mut re = vec![0u128; self.n];
        let mut im = vec![0u128; self.n];
        for (k, &c) in coeffs.iter().enumerate() {
            (re[k], im[k]) = self.mul_root(c, k, false, role)?;
        }
        self.dft(&mut re, &mut im, false, role)?;
        Ok((self.slot_pos.iter().map(|&t| re[t]).collect(), self.slot_pos.iter().map(|&t| im[t]).collect()))
    }

    /// Encode: shares of `N/2` real slot values → shares of the `N` coefficients, same scale.
    pub fn encode(&self, slots: &[u128], role: Role) -> Result<Vec<u128>, LinearError> {
        self.encode_complex(slots, None, role)
    }

    /// Encode of complex slots `re_j + i·im_j` (`im` absent: real slots). The conjugate
    /// evaluation point `N − 1 − t_j` gets the conjugate value, so the polynomial is real.
    /// Coefficient magnitudes are at most `max_j |z_j|` (a √2 over the real parts' bound).
    pub fn encode_complex(&self, slots: &[u128], im_slots: Option<&[u128]>, role: Role) -> Result<Vec<u128>, LinearError> {
        if slots.len() != self.n / 2 || im_slots.is_some_and(|v| v.len() != self.n / 2) {
            return Err(LinearError::BadParams(format!("encode of {} slots with N = {}", slots.len(), self.n)));
        }
        let mut re = vec![0u128; self.n];
        let mut im = vec![0u128; self.n];
        for (j, (&t, &z)) in self.slot_pos.iter().zip(slots).enumerate() {
            re[t] = z;
            re[self.n - 1 - t] = z;
            if let Some(v) = im_slots {
                im[t] = v[j];
                im[self.n - 1 - t] = v[j].wrapping_neg();
            }
        }
        self.dft(&mut re, &mut im, true, role)?;
        // c_k = Re(w_k·ζ^−k) = w_re·cos + w_im·sin.
        let mut out = Vec::with_capacity(self.n);
        for k in 0..self.n {
            let mut v = [re[k].wrapping_mul(self.root_re[k] as u128).wrapping_add(im[k].wrapping_mul(self.root_im[k] as u128))];
            trunc_local(&mut v, 128, self.tau, role)?;
            out.push(v[0]);
        }
        Ok(out)
    }
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

    fn join(a: &[u128], b: &[u128]) -> Vec<i128> {
        a.iter().zip(b).map(|(&x, &y)| x.wrapping_add(y) as i128).collect()
    }

    #[test]
    fn deterministic_roots_match_libm() {
        for big_m in [8u64, 64, 65536] {
            for m in 0..big_m.min(4096) {
                let (c, s) = det_cos_sin(m * (big_m / big_m.min(4096)).max(1), big_m);
                let th = 2.0 * std::f64::consts::PI * (m * (big_m / big_m.min(4096)).max(1)) as f64 / big_m as f64;
                assert!((c - th.cos()).abs() < 1e-15 && (s - th.sin()).abs() < 1e-15, "m={m} M={big_m}");
            }
        }
    }

    /// Direct O(N²) float evaluation `Re c(ζ^(5^j))`.
    fn direct_decode(c: &[f64]) -> Vec<f64> {
        let n = c.len();
        let mut g: u64 = 1;
        let mut out = Vec::new();
        for _ in 0..n / 2 {
            let th = std::f64::consts::PI * g as f64 / n as f64;
            out.push(c.iter().enumerate().map(|(k, &ck)| ck * (th * k as f64).cos()).sum());
            g = g * 5 % (2 * n as u64);
        }
        out
    }

    #[test]
    fn decode_on_shares_matches_the_canonical_embedding() {
        let mut prg = Prg::new([1; 16]);
        for n in [8usize, 64, 1024] {
            let codec = ShareCodec::new(n, 40).unwrap();
            let scale = 2f64.powi(30);
            let c: Vec<i128> = (0..n).map(|_| (prg.next_u128() as i128) >> (128 - 36)).collect();
            let (a, b) = split(&c, &mut prg);
            let za = codec.decode(&a, Role::Server).unwrap();
            let zb = codec.decode(&b, Role::Client).unwrap();
            let got = join(&za, &zb);
            let want = direct_decode(&c.iter().map(|&x| x as f64 / scale).collect::<Vec<_>>());
            // Each butterfly adds at most one unit and the N-term sums accumulate them: <= N + log N
            // units, plus the twiddles' relative 2^-40 per level.
            let tol = (n as f64 + n.trailing_zeros() as f64 + 2.0) / scale + 1e-10 * want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for j in 0..n / 2 {
                let e = (got[j] as f64 / scale - want[j]).abs();
                assert!(e <= tol, "N={n} j={j} err={e} tol={tol}");
            }
        }
    }

    #[test]
    fn encode_then_decode_round_trips() {
        let mut prg = Prg::new([2; 16]);
        for n in [16usize, 2048] {
            let codec = ShareCodec::new(n, 40).unwrap();
            let scale = 2f64.powi(32);
            let z: Vec<i128> = (0..n / 2).map(|_| (prg.next_u128() as i128) >> (128 - 38)).collect();
            let (a, b) = split(&z, &mut prg);
            let (ca, cb) = (codec.encode(&a, Role::Server).unwrap(), codec.encode(&b, Role::Client).unwrap());
            // The encoding is real: the float decode of the reconstructed coefficients is z.
            let c = join(&ca, &cb);
            let dz = direct_decode(&c.iter().map(|&x| x as f64 / scale).collect::<Vec<_>>());
            let (da, db) = (codec.decode(&ca, Role::Server).unwrap(), codec.decode(&cb, Role::Client).unwrap());
            let back = join(&da, &db);
            let lg = n.trailing_zeros() as f64;
            for j in 0..n / 2 {
                let zj = z[j] as f64 / scale;
                // Encode halves at every level (errors stay <= log N + 1 units per coefficient,
                // N of them summed by the evaluation); decode adds its own <= N + log N units.
                assert!((dz[j] - zj).abs() < (lg + 1.0) * n as f64 / scale + 1e-10, "N={n} j={j}");
                assert!((back[j] as f64 / scale - zj).abs() < (lg + 2.0) * 2.0 * n as f64 / scale + 1e-10, "N={n} j={j}");
            }
        }
    }

    /// Complex slots: the encoding of `re + i·im` is a real polynomial whose float evaluation
    /// at `ζ^(5^j)` is `re_j + i·im_j`, and `decode_complex` on the shares returns both parts.
    #[test]
    fn complex_slots_encode_and_decode_on_shares() {
        let mut prg = Prg::new([3; 16]);
        let n = 1024usize;
        let codec = ShareCodec::new(n, 40).unwrap();
        let scale = 2f64.powi(32);
        let zr: Vec<i128> = (0..n / 2).map(|_| (prg.next_u128() as i128) >> (128 - 38)).collect();
        let zi: Vec<i128> = (0..n / 2).map(|_| (prg.next_u128() as i128) >> (128 - 38)).collect();
        let (ra, rb) = split(&zr, &mut prg);
        let (ia, ib) = split(&zi, &mut prg);
        let ca = codec.encode_complex(&ra, Some(&ia), Role::Server).unwrap();
        let cb = codec.encode_complex(&rb, Some(&ib), Role::Client).unwrap();
        let c: Vec<f64> = join(&ca, &cb).iter().map(|&x| x as f64 / scale).collect();
        let (ua, va) = codec.decode_complex(&ca, Role::Server).unwrap();
        let (ub, vb) = codec.decode_complex(&cb, Role::Client).unwrap();
        let (back_re, back_im) = (join(&ua, &ub), join(&va, &vb));
        let lg = n.trailing_zeros() as f64;
        let mut g: u64 = 1;
        for j in 0..n / 2 {
            let th = std::f64::consts::PI * g as f64 / n as f64;
            let re: f64 = c.iter().enumerate().map(|(k, &ck)| ck * (th * k as f64).cos()).sum();
            let im: f64 = c.iter().enumerate().map(|(k, &ck)| ck * (th * k as f64).sin()).sum();
            g = g * 5 % (2 * n as u64);
            let (wr, wi) = (zr[j] as f64 / scale, zi[j] as f64 / scale);
            let tol = (lg + 1.0) * n as f64 / scale + 1e-10;
            assert!((re - wr).abs() < tol && (im - wi).abs() < tol, "j={j}: {re} {im} vs {wr} {wi}");
            let tol2 = (lg + 2.0) * 2.0 * n as f64 / scale + 1e-10;
            assert!((back_re[j] as f64 / scale - wr).abs() < tol2, "re j={j}");
            assert!((back_im[j] as f64 / scale - wi).abs() < tol2, "im j={j}");
        }
        assert!(codec.encode_complex(&ra, Some(&ia[1..]), Role::Server).is_err());
    }

    #[test]
    fn bad_sizes_are_errors() {
        assert!(ShareCodec::new(12, 40).is_err());
        assert!(ShareCodec::new(16, 60).is_err());
        let c = ShareCodec::new(16, 40).unwrap();
        assert!(c.decode(&[0; 15], Role::Server).is_err());
        assert!(c.encode(&[0; 9], Role::Client).is_err());
    }
}
