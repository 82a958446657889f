//! Field ↔ ring conversions and wide (up to 128-bit) share arithmetic for BLB's CKKS ↔ MPC
//! conversion (BLB §6.3, App. C.3–C.4; REFERENCE.md §5.4).
//!
//! Shares here are one party's `Vec<u128>`: additive mod `2^l` (`l <= 128`) or mod an odd
//! modulus `q < 2^126` (the CKKS ciphertext modulus at the conversion level, composed from its
//! RNS residues by the caller). P0 is the server, P1 the client (the key owner, BLB's "P0").
//!
//! | function | what | cost | failure |
//! |---|---|---|---|
//! | [`Mpc::field_to_ring_exact`] | `Z_q → Z_{2^l}`, any centred `v` (SiRNN wrap: millionaire on `⌈log2 q⌉` bits + B2A) | 1 millionaire + 1 COT + `1 + l` bits | 0 |
//! | [`field_to_ring_local`] | `Z_q → Z_{2^l}` when `log2 q ≥ B + 41` for `|v| < 2^B` | local | `< 2^(B+1)/q ≤ 2^−40` |
//! | [`ring_to_field_local`] | `Z_{2^l} → Z_q` when `|m| < 2^(l−41)` | local | `< 2^(B+1)/2^l ≤ 2^−40` |
//! | [`Mpc::extend_wide`] | `Z_{2^l} → Z_{2^L}`, `L <= 128`, `|x| < 2^(l−2)` (BumbleBee Alg. 5 heuristic) | 1 COT + `1 + (L − l)` bits | 0 |
//! | [`trunc_local`] | `x / 2^s` on `Z_{2^l}` shares, stochastic rounding (SecureML; BLB App. C.4) | local | `< |x|/2^(l−1)` |
//!
//! **The local field → ring** is our addition, not BLB's (which always runs SiRNN's signed
//! extension): when the modulus has 40 bits of slack over the value — converting one RNS prime
//! higher than needed — the wrap of the two shares is known with probability `1 − 2^−40`,
//! the same statistical argument BLB uses for ring → field. Proof: the decryptor's share `a` is
//! uniform in `[0, q)` (BLB Alg. 1 masks with a uniform `r̂`), the other is `b = v − a mod q`;
//! `a + b = v + q` unless `a ≤ v` (for `v ≥ 0`) or `a > q + v` (for `v < 0`), each of
//! probability `≤ (|v| + 1)/q`. The server's share is then taken as `b − q` over the integers.
//! The ring → field direction is the mirror argument with `2^l` in place of `q` (BLB App. C.3).

use crate::ctx::LedAcotWide;
use crate::{Mpc, MpcError, Result};
use nectar_net::{Channel, Role};

/// Statistical security parameter of the local steps (DESIGN: 40-bit statistical security;
/// BLB App. C.3–C.4 "error rate below 2^−40").
pub const STAT_SLACK_BITS: u32 = 40;

/// The low-`l`-bits mask, `1 <= l <= 128`.
pub fn mask128(l: u32) -> Result<u128> {
    match l {
        1..=127 => Ok((1u128 << l) - 1),
        128 => Ok(u128::MAX),
        _ => Err(MpcError::BadArgument(format!("ring width {l} not in 1..=128"))),
    }
}

/// `v` read as a signed integer of `Z_{2^l}`.
pub fn to_signed128(v: u128, l: u32) -> i128 {
    if l >= 128 {
        return v as i128;
    }
    let v = v & ((1u128 << l) - 1);
    if v >> (l - 1) == 1 {
        (v as i128) - (1i128 << l)
    } else {
        v as i128
    }
}

fn check_modulus(q: u128) -> Result<()> {
    if q < 3 || q % 2 == 0 || q >= 1u128 << 126 {
        return Err(MpcError::BadArgument(format!("modulus {q} must be odd, >= 3 and < 2^126")));
    }
    Ok(())
}

fn bits_of(q: u128) -> u32 {
    128 - q.leading_zeros()
}

/// Local probabilistic truncation `⌊x/2^s⌋` of `Z_{2^l}` shares (SecureML): P0 shifts its share,
/// P1 shifts the negation of its share and negates back. Result `⌊x/2^s⌋ + u` with
/// `Pr[u = 1] = (x mod 2^s)/2^s` over P0's uniform share — stochastic rounding, unbiased, so
/// errors of many truncations add like a random walk — except with probability
/// `< |x| / 2^(l−1)` (BLB App. C.4: keep `|x| < 2^(l−1−40)`). `server` is P0.
pub fn trunc_local(x: &mut [u128], l: u32, s: u32, role: Role) -> Result<()> {
    let m = mask128(l)?;
    let server = role == Role::Server;
    if s >= l {
        return Err(MpcError::BadArgument(format!("shift {s} too large for Z_2^{l}")));
    }
    for v in x.iter_mut() {
        *v = if server {
            (*v & m) >> s
        } else {
            (((v.wrapping_neg()) & m) >> s).wrapping_neg() & m
        };
    }
    Ok(())
}

impl Mpc {
    /// Arithmetic shares in `Z_{2^l}` (`l <= 128`) of XOR-shared bits: [`Mpc::b2a`] on the wide
    /// additive COT. Cost per bit: 1 COT + `1 + l` bits, 2 flows.
    pub fn b2a_wide(&mut self, ch: &mut dyn Channel, b: &[bool], l: u32) -> Result<Vec<u128>> {
        let m = mask128(l)?;
        if b.is_empty() {
            return Ok(Vec::new());
        }
        let deltas = || b.iter().map(|&x| x as u128).collect();
        Ok(match self.led_acot_wide(ch, deltas, || b.to_vec(), l)? {
            LedAcotWide::Sent(x) => b.iter().zip(x).map(|(&bi, xi)| (bi as u128).wrapping_add(xi.wrapping_mul(2)) & m).collect(),
            LedAcotWide::Received(y) => b.iter().zip(y).map(|(&bi, yi)| (bi as u128).wrapping_sub(yi.wrapping_mul(2)) & m).collect(),
        })
    }

    /// Heuristic signed extension `Z_{2^from} → Z_{2^to}` (`from <= 64 < ... to <= 128`), the wide
    /// form of [`Mpc::extend`] (BumbleBee App. E Alg. 5): exact for `|x| < 2^(from−2)`.
    /// P0 adds `2^(from−2)` so the MSB is publicly 0; the wrap is `msb(x_0) ∨ msb(x_1)` by one
    /// wide additive COT. Cost: 1 COT + `1 + to` bits, 2 flows.
    pub fn extend_wide(&mut self, ch: &mut dyn Channel, x: &[u64], from: u32, to: u32) -> Result<Vec<u128>> {
        if !(3..=64).contains(&from) || to <= from || to > 128 {
            return Err(MpcError::BadArgument(format!("extension Z_2^{from} -> Z_2^{to} not supported")));
        }
        let mf = mask128(from)?;
        let mt = mask128(to)?;
        let off = 1u128 << (from - 2);
        let server = self.is_server();
        let xs: Vec<u128> = x
            .iter()
            .map(|&v| if server { (v as u128).wrapping_add(off) & mf } else { v as u128 & mf })
            .collect();
        let msb: Vec<bool> = xs.iter().map(|&v| v >> (from - 1) == 1).collect();
        // OR of the share MSBs: w = m_s + m_r·(1 − m_s), the ACOT sender with Δ = 1 − m_s.
        let deltas = || msb.iter().map(|&b| 1 - b as u128).collect();
        let w: Vec<u128> = match self.led_acot_wide(ch, deltas, || msb.clone(), to)? {
            LedAcotWide::Sent(r) => r.iter().zip(&msb).map(|(&ri, &b)| (b as u128).wrapping_sub(ri) & mt).collect(),
            LedAcotWide::Received(y) => y,
        };
        Ok(xs
            .iter()
            .zip(&w)
            .map(|(&v, &wi)| {
                let y = v.wrapping_sub(wi << from);
                (if server { y.wrapping_sub(off) } else { y }) & mt
            })
            .collect())
    }

    /// Re-randomises `Z_{2^l}` shares with a fresh zero-sharing: P0 draws a seed, sends it
    /// (16 bytes, 1 flow), both expand `R`, P0 adds and P1 subtracts it. Afterwards P0's share
    /// is uniform over `Z_{2^l}` whatever local steps produced it — the hypothesis of
    /// [`ring_to_field_local`] (local truncations leave shares confined to a sub-range). Each
    /// party's view is its old share and `R`, so nothing about the value is revealed.
    pub fn rerandomize_wide(&mut self, ch: &mut dyn Channel, x: &mut [u128], l: u32) -> Result<()> {
        let m = mask128(l)?;
        let seed = if self.leads() {
            let seed = self.prg().gen_block();
            ch.send(&seed)?;
            seed
        } else {
            let bytes = ch.recv()?;
            <[u8; 16]>::try_from(bytes.as_slice())
                .map_err(|_| MpcError::BadMessage { what: "re-randomisation seed", expected: 16, got: bytes.len() })?
        };
        let mut prg = nectar_math::Prg::new(seed);
        let server = self.is_server();
        for v in x.iter_mut() {
            let r = prg.next_u128();
            *v = if server { v.wrapping_add(r) } else { v.wrapping_sub(r) } & m;
        }
        Ok(())
    }

    /// Exact field → ring (BLB App. C.3 with SiRNN's wrap): shares `a_b ∈ [0, q)` of a centred
    /// `v ∈ [−⌊q/2⌋, ⌈q/2⌉)`, `q < 2^64` odd, to shares of `v` in `Z_{2^l}`, `l <= 128`.
    /// P0 adds `⌊q/2⌋` (so `v' = v + ⌊q/2⌋ ∈ [0, q)`), the wrap `1{a_0 + a_1 ≥ q}` is one
    /// millionaire (`a_0 > q − 1 − a_1`) on `⌈log2 q⌉` bits, B2A into `Z_{2^l}`, then
    /// `a_b − q·w_b` and P0 subtracts `⌊q/2⌋`.
    pub fn field_to_ring_exact(&mut self, ch: &mut dyn Channel, a: &[u64], q: u64, l: u32) -> Result<Vec<u128>> {
        check_modulus(q as u128)?;
        let ml = mask128(l)?;
        if let Some(&bad) = a.iter().find(|&&v| v >= q) {
            return Err(MpcError::BadArgument(format!("share {bad} not reduced mod {q}")));
        }
        let half = q / 2;
        let server = self.is_server();
        let shares: Vec<u64> = a
            .iter()
            .map(|&v| if server { ((v as u128 + half as u128) % q as u128) as u64 } else { v })
            .collect();
        let bits = bits_of(q as u128);
        let input: Vec<u64> = if server { shares.clone() } else { shares.iter().map(|&v| q - 1 - v).collect() };
        let wb = self.millionaire(ch, &input, 1, bits)?;
        let w = self.b2a_wide(ch, &wb, l)?;
        Ok(shares
            .iter()
            .zip(&w)
            .map(|(&v, &wi)| {
                let y = (v as u128).wrapping_sub(wi.wrapping_mul(q as u128));
                (if server { y.wrapping_sub(half as u128) } else { y }) & ml
            })
            .collect())
    }
}

/// A field modulus for [`field_to_ring_local`]: its bit length and its value mod `2^128`
/// (moduli of any size: the CKKS modulus at the conversion level may span several primes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldModulus {
    pub bits: u32,
    pub low: u128,
}

impl FieldModulus {
    /// An odd modulus below `2^126`.
    pub fn small(q: u128) -> Result<Self> {
        check_modulus(q)?;
        Ok(Self { bits: bits_of(q), low: q })
    }
}

/// Local field → ring (module doc): shares `a_b ∈ [0, q)` of `v` with `|v| < 2^bound_bits`
/// and `log2 q ≥ bound_bits + 41`, given as their low 128 bits; P0 (the party whose share is
/// `−r̂`) takes `a_0 − q`. Exact except with probability `< 2^(bound_bits+1)/q`. No
/// communication.
pub fn field_to_ring_local(role: Role, a: &[u128], q: FieldModulus, bound_bits: u32, l: u32) -> Result<Vec<u128>> {
    let ml = mask128(l)?;
    if q.low % 2 == 0 || bound_bits + 1 + STAT_SLACK_BITS > q.bits.saturating_sub(1) || bound_bits + 1 > l {
        return Err(MpcError::BadArgument(format!(
            "|v| < 2^{bound_bits} leaves less than {STAT_SLACK_BITS} bits of slack in a {}-bit modulus (or overflows Z_2^{l})",
            q.bits
        )));
    }
    if q.bits <= 126 {
        if let Some(&bad) = a.iter().find(|&&v| v >= q.low) {
            return Err(MpcError::BadArgument(format!("share {bad} not reduced mod {}", q.low)));
        }
    }
    let server = role == Role::Server;
    Ok(a.iter().map(|&v| if server { v.wrapping_sub(q.low) & ml } else { v & ml }).collect())
}

/// Local ring → field (BLB App. C.3): shares in `Z_{2^l}` of `m` with `|m| < 2^bound_bits`,
/// `bound_bits + 41 <= l`, to shares mod `q`: P1 reduces its share, P0 takes `x_0 − 2^l`
/// (exact except with probability `< 2^(bound_bits+1)/2^l`).
pub fn ring_to_field_local(role: Role, x: &[u128], l: u32, bound_bits: u32, q: u128) -> Result<Vec<u128>> {
    check_modulus(q)?;
    let ml = mask128(l)?;
    if bound_bits + 1 + STAT_SLACK_BITS > l {
        return Err(MpcError::BadArgument(format!(
            "|m| < 2^{bound_bits} leaves less than {STAT_SLACK_BITS} bits of slack in Z_2^{l}"
        )));
    }
    // 2^l mod q, computed without overflow for l = 128.
    let two_l = if l == 128 { (u128::MAX % q + 1) % q } else { (1u128 << l) % q };
    let server = role == Role::Server;
    Ok(x.iter()
        .map(|&v| {
            let r = (v & ml) % q;
            if server { (r + q - two_l) % q } else { r }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_math::Prg;
    use nectar_net::{mem::run_pair, MemChannel, Role};
    use nectar_ot::Producer;

    fn pair<A: Send + 'static, B: Send + 'static>(
        s: impl FnOnce(&mut Mpc, &mut MemChannel) -> A + Send + 'static,
        c: impl FnOnce(&mut Mpc, &mut MemChannel) -> B + Send + 'static,
    ) -> (A, B) {
        run_pair(
            move |ch| {
                let mut m = Mpc::setup(Role::Server, ch, Prg::new([11; 16]), Producer::Iknp).unwrap();
                s(&mut m, ch)
            },
            move |ch| {
                let mut m = Mpc::setup(Role::Client, ch, Prg::new([12; 16]), Producer::Iknp).unwrap();
                c(&mut m, ch)
            },
        )
    }

    fn uniform_below(prg: &mut Prg, q: u128) -> u128 {
        loop {
            let v = prg.next_u128() & (u128::MAX >> q.leading_zeros());
            if v < q {
                return v;
            }
        }
    }

    /// Shares mod `q` of each `v`: the client's share uniform (the decryptor's `Encode(x) + r̂`).
    fn share_mod(vs: &[i128], q: u128, prg: &mut Prg) -> (Vec<u128>, Vec<u128>) {
        let c: Vec<u128> = vs.iter().map(|_| uniform_below(prg, q)).collect();
        let s = vs.iter().zip(&c).map(|(&v, &ci)| (v.rem_euclid(q as i128) as u128 + q - ci) % q).collect();
        (s, c)
    }

    #[test]
    fn exact_field_to_ring_is_exact_on_the_whole_centred_range() {
        let q: u64 = 0x0fff_ffff_fffc_0001; // odd, 60 bits
        let l = 104;
        let mut prg = Prg::new([3; 16]);
        let half = (q / 2) as i128;
        let mut vs: Vec<i128> = vec![0, 1, -1, half, -half, half - 1, 12345, -(1 << 50)];
        vs.extend((0..500).map(|_| (uniform_below(&mut prg, q as u128) as i128) - half));
        let (s, c) = share_mod(&vs, q as u128, &mut prg);
        let s64: Vec<u64> = s.iter().map(|&v| v as u64).collect();
        let c64: Vec<u64> = c.iter().map(|&v| v as u64).collect();
        let (ys, yc) = pair(
            move |m, ch| m.field_to_ring_exact(ch, &s64, q, l).unwrap(),
            move |m, ch| m.field_to_ring_exact(ch, &c64, q, l).unwrap(),
        );
        for i in 0..vs.len() {
            assert_eq!(to_signed128(ys[i].wrapping_add(yc[i]), l), vs[i], "i={i}");
        }
    }

    #[test]
    fn local_field_to_ring_and_back() {
        // Two 60-bit primes' worth of modulus, values of 60 bits: 60 bits of slack.
        let q: u128 = (1u128 << 119) + 0x3b; // odd
        let mut prg = Prg::new([4; 16]);
        let bound = 60;
        let vs: Vec<i128> = (0..2000).map(|_| (prg.next_u128() as i128) >> (128 - bound)).collect();
        let (s, c) = share_mod(&vs, q, &mut prg);
        let l = 128;
        let fq = FieldModulus::small(q).unwrap();
        let ys = field_to_ring_local(Role::Server, &s, fq, bound, l).unwrap();
        let yc = field_to_ring_local(Role::Client, &c, fq, bound, l).unwrap();
        for i in 0..vs.len() {
            assert_eq!(ys[i].wrapping_add(yc[i]) as i128, vs[i], "i={i}");
        }
        // And back: the ring shares are uniform, so ring → field is exact whp.
        let q2: u128 = 0x0fff_ffff_fffc_0001;
        let zs = ring_to_field_local(Role::Server, &ys, l, bound, q2).unwrap();
        let zc = ring_to_field_local(Role::Client, &yc, l, bound, q2).unwrap();
        for i in 0..vs.len() {
            assert_eq!((zs[i] + zc[i]) % q2, vs[i].rem_euclid(q2 as i128) as u128, "i={i}");
        }
        // Too little slack is refused.
        assert!(field_to_ring_local(Role::Server, &s, fq, 80, l).is_err());
        assert!(ring_to_field_local(Role::Server, &ys, 100, 60, q2).is_err());
    }

    #[test]
    fn wide_extension_and_b2a() {
        let from = 64;
        let to = 104;
        let mut prg = Prg::new([5; 16]);
        let vs: Vec<i64> = (0..1000).map(|i| (((prg.next_u128() as u64) as i64) >> 3) * if i % 2 == 0 { 1 } else { -1 }).collect();
        let s: Vec<u64> = vs.iter().map(|_| prg.next_u128() as u64).collect();
        let c: Vec<u64> = vs.iter().zip(&s).map(|(&v, &si)| (v as u64).wrapping_sub(si)).collect();
        let bits: Vec<bool> = (0..300).map(|i| i % 3 == 0).collect();
        let bs: Vec<bool> = (0..300).map(|i| i % 5 == 0).collect();
        let bc: Vec<bool> = bits.iter().zip(&bs).map(|(&b, &x)| b ^ x).collect();
        let ((es, ws), (ec, wc)) = pair(
            move |m, ch| (m.extend_wide(ch, &s, from, to).unwrap(), m.b2a_wide(ch, &bs, 128).unwrap()),
            move |m, ch| (m.extend_wide(ch, &c, from, to).unwrap(), m.b2a_wide(ch, &bc, 128).unwrap()),
        );
        for i in 0..vs.len() {
            assert_eq!(to_signed128(es[i].wrapping_add(ec[i]), to), vs[i] as i128, "i={i}");
        }
        for i in 0..bits.len() {
            assert_eq!(ws[i].wrapping_add(wc[i]), bits[i] as u128, "i={i}");
        }
    }

    #[test]
    fn local_truncation_error_is_at_most_one() {
        let l = 128;
        let mut prg = Prg::new([6; 16]);
        for _ in 0..2000 {
            let v = (prg.next_u128() as i128) >> 48; // 80-bit values: failure < 2^-47
            let s0 = prg.next_u128();
            let s1 = (v as u128).wrapping_sub(s0);
            let (mut a, mut b) = ([s0], [s1]);
            trunc_local(&mut a, l, 20, Role::Server).unwrap();
            trunc_local(&mut b, l, 20, Role::Client).unwrap();
            let got = a[0].wrapping_add(b[0]) as i128;
            let want = v >> 20;
            assert!(got == want || got == want + 1, "v={v} got={got} want={want}");
        }
        // Unbiased: for a fixed x, the mean over fresh sharings is x / 2^s.
        let x: i128 = (5 << 20) + (3 << 18); // 5.75 · 2^20
        let mut sum = 0.0;
        let trials = 4000;
        for _ in 0..trials {
            let s0 = prg.next_u128();
            let (mut a, mut b) = ([s0], [(x as u128).wrapping_sub(s0)]);
            trunc_local(&mut a, l, 20, Role::Server).unwrap();
            trunc_local(&mut b, l, 20, Role::Client).unwrap();
            sum += a[0].wrapping_add(b[0]) as i128 as f64;
        }
        let mean = sum / trials as f64;
        assert!((mean - 5.75).abs() < 0.05, "mean {mean}");
    }
}
