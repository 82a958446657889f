//! IKNP correlated-OT extension (Ishai, Kilian, Nissim, Petrank, CRYPTO'03), semi-honest, in the
//! random-COT form used by emp-ot / libOTe to bootstrap Ferret (Yang et al. CCS'20 §3).
//!
//! Setup: 128 base OTs with the roles reversed — the COT *sender* is the base-OT receiver with
//! choice bits `Δ` (`lsb(Δ) = 1`), the COT *receiver* is the base-OT sender with seed pairs
//! `(k_{j,0}, k_{j,1})`; each seed keys an AES-CTR [`Prg`] whose stream continues across calls.
//!
//! Extension of `m` random COTs (one flow, receiver → sender, `128·m` bits):
//! the receiver draws random bits `r`, sets column `t_j = G(k_{j,0})`, sends
//! `u_j = t_j ⊕ G(k_{j,1}) ⊕ r`; the sender computes `q_j = G(k_{j,Δ_j}) ⊕ Δ_j·u_j = t_j ⊕ Δ_j·r`.
//! Transposing the 128 × m bit matrices gives rows with `t_i = q_i ⊕ r_i·Δ`. Finally the sender
//! normalises `q_i ← q_i ⊕ lsb(q_i)·Δ`, so the receiver's choice bit is `lsb(t_i) = r_i ⊕ lsb(q_i)`
//! (still uniform and hidden from the sender), matching the crate's LSB convention.
//!
//! The transpose works on 128 × 128 blocks in registers (Eklundh's recursive swap, 7 passes).
//! Work is chunked into [`CHUNK`] instances per frame so memory stays bounded; chunks travel in
//! the same direction, so a call is one flow however large `m` is.

use crate::{base_ot, OtError, KAPPA};
use nectar_math::Prg;
use nectar_net::Channel;
use rand_core::RngCore;

/// Instances per frame (LOCAL; a multiple of 128).
pub const CHUNK: usize = 1 << 16;

/// Transpose a 128 × 128 bit matrix in place: afterwards bit `c` of `a[r]` is the former bit
/// `r` of `a[c]`.
pub fn transpose128(a: &mut [u128; 128]) {
    const MASKS: [u128; 7] = [
        0x0000_0000_0000_0000_ffff_ffff_ffff_ffff,
        0x0000_0000_ffff_ffff_0000_0000_ffff_ffff,
        0x0000_ffff_0000_ffff_0000_ffff_0000_ffff,
        0x00ff_00ff_00ff_00ff_00ff_00ff_00ff_00ff,
        0x0f0f_0f0f_0f0f_0f0f_0f0f_0f0f_0f0f_0f0f,
        0x3333_3333_3333_3333_3333_3333_3333_3333,
        0x5555_5555_5555_5555_5555_5555_5555_5555,
    ];
    let mut w = 64usize;
    for m in MASKS {
        let mut r = 0;
        while r < 128 {
            for i in r..r + w {
                let t = ((a[i] >> w) ^ a[i + w]) & m;
                a[i + w] ^= t;
                a[i] ^= t << w;
            }
            r += 2 * w;
        }
        w /= 2;
    }
}

/// Turn `KAPPA` column byte strings (each `n/8` bytes, `n` a multiple of 128) into `n` rows.
fn columns_to_rows(cols: &[Vec<u8>], n: usize, out: &mut Vec<u128>) {
    let mut blk = [0u128; 128];
    for b in 0..n / 128 {
        for (j, col) in cols.iter().enumerate() {
            let mut w = [0u8; 16];
            w.copy_from_slice(&col[16 * b..16 * b + 16]);
            blk[j] = u128::from_le_bytes(w);
        }
        transpose128(&mut blk);
        out.extend_from_slice(&blk);
    }
}

/// The COT sender's state (holds `Δ`).
pub struct IknpSender {
    delta: u128,
    prgs: Vec<Prg>,
}

/// The COT receiver's state.
pub struct IknpReceiver {
    prgs0: Vec<Prg>,
    prgs1: Vec<Prg>,
}

impl IknpSender {
    /// Run the base OTs (as base-OT receiver) with a fresh `Δ` drawn from `prg`.
    pub fn setup<C: Channel + ?Sized>(ch: &mut C, prg: &mut Prg) -> Result<Self, OtError> {
        let delta = prg.next_u128() | 1;
        Self::setup_with_delta(ch, prg, delta)
    }

    /// Run the base OTs with a given `Δ` (its LSB must be 1).
    pub fn setup_with_delta<C: Channel + ?Sized>(ch: &mut C, prg: &mut Prg, delta: u128) -> Result<Self, OtError> {
        if delta & 1 != 1 {
            return Err(OtError::BadArgument("IKNP Δ must have LSB 1".into()));
        }
        let bits: Vec<bool> = (0..KAPPA).map(|j| (delta >> j) & 1 == 1).collect();
        let keys = base_ot::recv(ch, &bits, prg)?;
        Ok(IknpSender { delta, prgs: keys.into_iter().map(|k| Prg::new(k.to_le_bytes())).collect() })
    }

    /// The global correlation `Δ`.
    pub fn delta(&self) -> u128 {
        self.delta
    }

    /// `m` random COTs: returns `q_i` (`lsb = 0`); the receiver holds `q_i ⊕ b_i·Δ`.
    pub fn extend<C: Channel + ?Sized>(&mut self, ch: &mut C, m: usize) -> Result<Vec<u128>, OtError> {
        let mut out = Vec::with_capacity(m.div_ceil(128) * 128);
        let mut done = 0;
        while done < m {
            let c = (m - done).min(CHUNK);
            let cp = c.div_ceil(128) * 128;
            let bytes = cp / 8;
            let u = ch.recv()?;
            if u.len() != KAPPA * bytes {
                return Err(OtError::BadMessage { what: "IKNP columns", expected: KAPPA * bytes, got: u.len() });
            }
            let mut cols = Vec::with_capacity(KAPPA);
            for j in 0..KAPPA {
                let mut q = vec![0u8; bytes];
                self.prgs[j].fill_bytes(&mut q);
                if (self.delta >> j) & 1 == 1 {
                    for (x, y) in q.iter_mut().zip(&u[j * bytes..(j + 1) * bytes]) {
                        *x ^= y;
                    }
                }
                cols.push(q);
            }
            let start = out.len();
            columns_to_rows(&cols, cp, &mut out);
            out.truncate(start + c);
            done += c;
        }
        let d = self.delta;
        for q in out.iter_mut() {
            *q ^= (*q & 1).wrapping_neg() & d;
        }
        Ok(out)
    }
}

impl IknpReceiver {
    /// Run the base OTs (as base-OT sender).
    pub fn setup<C: Channel + ?Sized>(ch: &mut C, prg: &mut Prg) -> Result<Self, OtError> {
        let pairs = base_ot::send(ch, KAPPA, prg)?;
        Ok(IknpReceiver {
            prgs0: pairs.iter().map(|p| Prg::new(p.0.to_le_bytes())).collect(),
            prgs1: pairs.iter().map(|p| Prg::new(p.1.to_le_bytes())).collect(),
        })
    }

    /// `m` random COTs: returns `t_i`, whose LSB is the (random) choice bit.
    pub fn extend<C: Channel + ?Sized>(&mut self, ch: &mut C, m: usize, prg: &mut Prg) -> Result<Vec<u128>, OtError> {
        let mut out = Vec::with_capacity(m.div_ceil(128) * 128);
        let mut done = 0;
        while done < m {
            let c = (m - done).min(CHUNK);
            let cp = c.div_ceil(128) * 128;
            let bytes = cp / 8;
            let mut r = vec![0u8; bytes];
            prg.fill_bytes(&mut r);
            let mut msg = vec![0u8; KAPPA * bytes];
            let mut cols = Vec::with_capacity(KAPPA);
            let mut g1 = vec![0u8; bytes];
            for j in 0..KAPPA {
                let mut t = vec![0u8; bytes];
                self.prgs0[j].fill_bytes(&mut t);
                self.prgs1[j].fill_bytes(&mut g1);
                let u = &mut msg[j * bytes..(j + 1) * bytes];
                for i in 0..bytes {
                    u[i] = t[i] ^ g1[i] ^ r[i];
                }
                cols.push(t);
            }
            ch.send(&msg)?;
            let start = out.len();
            columns_to_rows(&cols, cp, &mut out);
            out.truncate(start + c);
            done += c;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_net::mem::run_pair;

    #[test]
    fn transpose_matches_naive() {
        let mut p = Prg::new([5; 16]);
        let mut a = [0u128; 128];
        for x in a.iter_mut() {
            *x = p.next_u128();
        }
        let orig = a;
        transpose128(&mut a);
        for r in 0..128 {
            for c in 0..128 {
                assert_eq!((a[r] >> c) & 1, (orig[c] >> r) & 1);
            }
        }
    }

    #[test]
    fn cot_relation_odd_counts_and_continuation() {
        let (s, r) = run_pair(
            |c| {
                let mut prg = Prg::new([1; 16]);
                let mut s = IknpSender::setup(c, &mut prg).unwrap();
                let a = s.extend(c, 1000).unwrap();
                let b = s.extend(c, CHUNK + 77).unwrap();
                (s.delta(), a, b)
            },
            |c| {
                let mut prg = Prg::new([2; 16]);
                let mut r = IknpReceiver::setup(c, &mut prg).unwrap();
                let a = r.extend(c, 1000, &mut prg).unwrap();
                let b = r.extend(c, CHUNK + 77, &mut prg).unwrap();
                (a, b)
            },
        );
        let (delta, sa, sb) = s;
        assert_eq!(delta & 1, 1);
        assert_eq!(sa.len(), 1000);
        assert_eq!(sb.len(), CHUNK + 77);
        let mut ones = 0;
        for (q, t) in sa.iter().chain(&sb).zip(r.0.iter().chain(&r.1)) {
            assert_eq!(q & 1, 0);
            let b = t & 1;
            ones += b;
            assert_eq!(*t, q ^ if b == 1 { delta } else { 0 });
        }
        let n = (1000 + CHUNK + 77) as f64;
        assert!((ones as f64 / n - 0.5).abs() < 0.02);
        assert_ne!(sa[0], sb[0]);
    }
}
