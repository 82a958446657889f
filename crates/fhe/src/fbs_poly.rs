//! LEAF's functional-bootstrapping polynomial (LEAF §3.3, Lemma 2; REFERENCE.md §6.4): for a
//! prime `P` and any `f: Z_P → Z_P`, the coefficients of the unique `f_poly` of degree `<= P−1`
//! with `f_poly(x) = f(x)` on `Z_P`:
//! `f_poly(x) = f(0) − Σ_{i=1}^{P−1} x^i·Σ_a f(a)·a^{P−1−i} (mod P)`.
//!
//! **Fast construction.** For `1 <= i <= P−2` only `a ≠ 0` contributes and `a^{P−1−i} = a^{−i}`;
//! with a generator `g` of `Z_P^*` and `h_j = f(g^j)`, the inner sum is
//! `S_i = Σ_{j<P−1} h_j·(g^{−1})^{ij}`: a length-`(P−1)` DFT over `Z_P` itself. For
//! `P − 1 = 2^k` (LEAF's `P = 65537`) it is a radix-2 NTT mod `P`: `O(P log P)`, a few ms. The
//! top coefficient also takes the `a = 0` term (`0^0 = 1`): `c_{P−1} = −(S_0 + f(0))`. Other
//! primes fall back to the direct `O(P²)` sum (fine for the small primes of tests).
//!
//! **LEAF's activation tables** ([`FbsParams`]): the slot value is `x = α·m + e` (mod `P`),
//! `m ∈ Z_p` (read as signed), `|e| < α/2`; `f(x) = α·g(⌊(x + α/2)/α⌋ mod p)` on the unsigned
//! representative `x ∈ [0, P)`, so `f_poly(α·m + e) = α·g(m)` for every `m` and `|e| < α/2`
//! (for `m = 0` and `e < 0`, `x = P + e` lands in bin `p ≡ 0` because `P ≡ 1 mod α`).
//! **Offset choice:** LEAF Eq. (8) writes `⌊x/α⌋` yet states the condition `|e| < α/2`; LEAFc's
//! shipped polynomials use the floor (noise in `[0, α)`). We put the `α/2` offset inside `f`
//! (REFERENCE.md §6.4, §8 item 8) so that the encoder stays `α·m` and the noise budget is the
//! symmetric `|e| < α/2 = 64` that LEAF §4's failure-rate argument (σ < 10) assumes.
//! `g(m) = round(s·r(m/s)) mod p` (LEAF §3.3 "Real value functions", `s = 16`,
//! round half away from zero; LEAFc's `lut-16` truncates toward zero instead), for
//! `r = GELU` (exact, `x·Φ(x)` with `erf`) and `r = SiLU`.

use crate::FheError;
use nectar_math::modulus::is_prime;

/// LEAF's functional-bootstrapping parameters (LEAF §4; REFERENCE.md §6.1). AGREEMENT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FbsParams {
    /// BFV plaintext modulus = RLWE ciphertext modulus `P` (prime).
    pub big_p: u64,
    /// RLWE plaintext modulus `p` (messages `m ∈ Z_p`, read as signed).
    pub small_p: u64,
    /// Scaling `α = ⌊P/p⌋`.
    pub alpha: u64,
    /// Rounding parameter `s`: `m` stands for the real `m/s`.
    pub scale: u32,
}

impl FbsParams {
    /// LEAF §4: `P = 65537`, `p = 512`, `α = 128`, `s = 16` (inputs in `[−16, 16)`).
    pub const LEAF: FbsParams = FbsParams { big_p: 65537, small_p: 512, alpha: 128, scale: 16 };

    /// nectar's set for a whole model (`--suite leaf`, [`crate::ffn::LeafFormat::wide`]): the
    /// same `1/16` grid over `[−32, 32)` — `p = 1024`, `α = 64`. DEVIATION: MiniLM's FFN
    /// pre-activations reach 24.4 on our test sentences, and outside LEAF's `[−16, 16)` the
    /// message wraps (GELU(24) read as GELU(−8) = 0); the price is half the noise margin
    /// (`|e| < α/2 = 32`), so an input within the noise of a bin edge may take the
    /// neighbouring bin (±1/16).
    pub const WIDE: FbsParams = FbsParams { big_p: 65537, small_p: 1024, alpha: 64, scale: 16 };

    /// Checks `P` prime `< 2^32`, `2 <= p`, `α = ⌊P/p⌋ >= 2`, `s >= 1`.
    pub fn validate(&self) -> Result<(), FheError> {
        if self.big_p >= 1 << 32 || !is_prime(self.big_p) {
            return Err(FheError::InvalidParams(format!("P = {} is not a prime below 2^32", self.big_p)));
        }
        if self.small_p < 2 || self.alpha < 2 || self.alpha != self.big_p / self.small_p || self.scale == 0 {
            return Err(FheError::InvalidParams(format!("need p >= 2, α = ⌊P/p⌋ >= 2, s >= 1: {self:?}")));
        }
        Ok(())
    }

    /// `g(m) = round(s·r(m_signed/s)) mod p` for every `m ∈ Z_p`.
    pub fn g_table(&self, r: impl Fn(f64) -> f64) -> Vec<u64> {
        let p = self.small_p as i64;
        let s = self.scale as f64;
        (0..p)
            .map(|m| {
                let ms = if 2 * m >= p { m - p } else { m };
                let v = (s * r(ms as f64 / s)).round() as i64;
                v.rem_euclid(p) as u64
            })
            .collect()
    }

    /// `f(x) = α·g(⌊(x + α/2)/α⌋ mod p)` for every `x ∈ [0, P)` (`g` given as a table on `Z_p`).
    pub fn f_table(&self, g: &[u64]) -> Result<Vec<u64>, FheError> {
        self.validate()?;
        if g.len() as u64 != self.small_p || g.iter().any(|&v| v >= self.small_p) {
            return Err(FheError::InvalidParams("g must have p entries in Z_p".into()));
        }
        let (a, p) = (self.alpha, self.small_p);
        Ok((0..self.big_p).map(|x| a * g[(((x + a / 2) / a) % p) as usize] % self.big_p).collect())
    }

    /// The GELU table `f` over `Z_P` (LEAF §4.2).
    pub fn gelu_f(&self) -> Result<Vec<u64>, FheError> {
        self.f_table(&self.g_table(gelu))
    }

    /// The SiLU table `f` over `Z_P`.
    pub fn silu_f(&self) -> Result<Vec<u64>, FheError> {
        self.f_table(&self.g_table(silu))
    }
}

/// Exact GELU `x·Φ(x) = x·(1 + erf(x/√2))/2` (`nectar_math::real::gelu`).
pub fn gelu(x: f64) -> f64 {
    nectar_math::real::gelu(x, nectar_math::real::GeluForm::Erf)
}

/// SiLU `x·σ(x) = x/(1 + e^{−x})` (`nectar_math::real::silu`).
pub fn silu(x: f64) -> f64 {
    nectar_math::real::silu(x)
}

/// `a·b mod p` for `a, b < p < 2^32`.
#[inline]
fn mulm(a: u64, b: u64, p: u64) -> u64 {
    a * b % p
}

fn powm(mut a: u64, mut e: u64, p: u64) -> u64 {
    let mut r = 1 % p;
    a %= p;
    while e > 0 {
        if e & 1 == 1 {
            r = mulm(r, a, p);
        }
        a = mulm(a, a, p);
        e >>= 1;
    }
    r
}

/// The smallest generator of `Z_P^*` (`P` prime).
fn generator(p: u64) -> u64 {
    if p == 2 {
        return 1;
    }
    let mut factors = Vec::new();
    let mut m = p - 1;
    let mut d = 2;
    while d * d <= m {
        if m % d == 0 {
            factors.push(d);
            while m % d == 0 {
                m /= d;
            }
        }
        d += 1;
    }
    if m > 1 {
        factors.push(m);
    }
    (2..p).find(|&g| factors.iter().all(|&r| powm(g, (p - 1) / r, p) != 1)).unwrap_or(1)
}

/// In-place cyclic DFT `A_k = Σ_j a_j·ω^{jk} mod p` of power-of-two length (`ω` of that order).
fn ntt_cyclic(a: &mut [u64], omega: u64, p: u64) {
    let n = a.len();
    if n <= 1 {
        return;
    }
    let bits = n.trailing_zeros();
    for i in 0..n {
        let j = i.reverse_bits() >> (usize::BITS - bits);
        if i < j {
            a.swap(i, j);
        }
    }
    let mut len = 2;
    while len <= n {
        let w_len = powm(omega, (n / len) as u64, p);
        let half = len / 2;
        let tw: Vec<u64> = std::iter::successors(Some(1u64), |&w| Some(mulm(w, w_len, p))).take(half).collect();
        for blk in a.chunks_mut(len) {
            let (lo, hi) = blk.split_at_mut(half);
            for ((u, v), &w) in lo.iter_mut().zip(hi.iter_mut()).zip(&tw) {
                let x = *u;
                let y = mulm(*v, w, p);
                *u = (x + y) % p;
                *v = (x + p - y) % p;
            }
        }
        len <<= 1;
    }
}

/// Coefficients `c_0..c_{P−1}` (constant first) of the unique `f_poly` of degree `<= P−1` with
/// `f_poly(a) = f[a]` for every `a ∈ Z_P` (LEAF Lemma 2). `f` has `P` entries, each `< P`.
pub fn interpolate(p: u64, f: &[u64]) -> Result<Vec<u64>, FheError> {
    if p >= 1 << 32 || !is_prime(p) {
        return Err(FheError::InvalidParams(format!("P = {p} is not a prime below 2^32")));
    }
    if f.len() as u64 != p || f.iter().any(|&v| v >= p) {
        return Err(FheError::InvalidParams(format!("f must have P = {p} entries below P")));
    }
    let order = (p - 1) as usize;
    let g = generator(p);
    // h_j = f(g^j).
    let mut h = Vec::with_capacity(order);
    let mut gj = 1u64;
    for _ in 0..order {
        h.push(f[gj as usize]);
        gj = mulm(gj, g, p);
    }
    let g_inv = powm(g, p - 2, p);
    // s[i] = Σ_j h_j·g^{−ij}.
    let s = if order.is_power_of_two() {
        let mut s = h;
        ntt_cyclic(&mut s, g_inv, p);
        s
    } else {
        (0..order)
            .map(|i| {
                let w = powm(g_inv, i as u64, p);
                let mut acc = 0u64;
                let mut wj = 1u64;
                for &hj in &h {
                    acc = (acc + mulm(hj, wj, p)) % p;
                    wj = mulm(wj, w, p);
                }
                acc
            })
            .collect()
    };
    let neg = |v: u64| (p - v % p) % p;
    let mut c = vec![0u64; p as usize];
    c[0] = f[0];
    for i in 1..order {
        c[i] = neg(s[i]);
    }
    c[order] = neg((s[0] + f[0]) % p);
    Ok(c)
}

/// `Σ_i c_i·x^i mod p` by Horner (`p < 2^32`).
pub fn eval_horner(coeffs: &[u64], p: u64, x: u64) -> u64 {
    coeffs.iter().rev().fold(0u64, |acc, &c| (acc * x + c) % p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_math::Prg;
    use rand_core::RngCore;

    fn random_f(prg: &mut Prg, p: u64) -> Vec<u64> {
        (0..p).map(|_| prg.next_u64() % p).collect()
    }

    #[test]
    fn interpolation_is_exact_on_every_point() {
        let mut prg = Prg::new([7; 16]);
        // 257 (NTT path), 97 and 2 and 3 (direct path / degenerate).
        for p in [2u64, 3, 97, 257, 7681] {
            let f = random_f(&mut prg, p);
            let c = interpolate(p, &f).unwrap();
            assert_eq!(c.len() as u64, p);
            for x in 0..p {
                assert_eq!(eval_horner(&c, p, x), f[x as usize], "P = {p}, x = {x}");
            }
        }
        assert!(interpolate(91, &[0; 91]).is_err());
        assert!(interpolate(97, &[0; 96]).is_err());
        assert!(interpolate(97, &[97; 97]).is_err());
    }

    #[test]
    fn direct_formula_matches_on_small_prime() {
        // Lemma 2 term by term at P = 17 (NTT path).
        let p = 17u64;
        let mut prg = Prg::new([8; 16]);
        let f = random_f(&mut prg, p);
        let c = interpolate(p, &f).unwrap();
        assert_eq!(c[0], f[0]);
        for i in 1..p {
            let s = (0..p).fold(0u64, |acc, a| (acc + f[a as usize] * powm(a, p - 1 - i, p)) % p);
            assert_eq!(c[i as usize], (p - s) % p, "i = {i}");
        }
    }

    #[test]
    fn gelu_table_is_stable_and_in_range() {
        let fp = FbsParams::LEAF;
        fp.validate().unwrap();
        for r in [gelu as fn(f64) -> f64, silu] {
            // No value lies near a rounding tie, so the table does not hinge on erf's last bits.
            for m in -256i64..256 {
                let v = 16.0 * r(m as f64 / 16.0);
                assert!((v - v.floor() - 0.5).abs() > 1e-9, "m = {m}: {v}");
                assert!((-256.0..255.5).contains(&v));
            }
        }
        let g = fp.g_table(gelu);
        assert_eq!(g[0], 0);
        assert_eq!(g[16], 13); // 16·GELU(1) = 13.46
        assert_eq!(g[512 - 16], 512 - 3); // 16·GELU(−1) = −2.54
        assert_eq!(g[255], 255);
        assert!(FbsParams { alpha: 127, ..fp }.validate().is_err());
    }
}
