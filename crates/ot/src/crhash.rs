//! Fixed-key AES primitives: the correlation-robust hash and the GGM length-doubling PRG.
//!
//! - [`Crh::tccr`]: the tweakable circular correlation-robust hash of Guo, Katz, Wang, Yu
//!   ("Efficient and secure multiparty computation from fixed-key block ciphers", S&P'20, §7.4):
//!   `H(i, x) = π(π(x) ⊕ i) ⊕ π(x)` with `π` = AES-128 under a fixed public key. It turns a COT
//!   pair `(q, q ⊕ Δ)` into two independent-looking pads, the tweak `i` making every use unique.
//! - [`Crh::prg2`]: the GGM length-doubling PRG `G(x) = (π₀(x) ⊕ x, π₁(x) ⊕ x)` with two fixed
//!   keys (Davies–Meyer style, as emp-ot's `PRP`-based tree expansion).
//!
//! All calls take whole slices and encrypt [`PIPE`] blocks at a time so the AES pipeline stays
//! full: VAES, 16 blocks per iteration, where the CPU has it ([`crate::vaes`]), else the `aes`
//! crate (AES-NI when the CPU has it, 8 blocks in flight).
//!
//! Keys (AGREEMENT): fixed public constants, identical in both parties; changing them changes
//! every transcript.

use aes::cipher::{generic_array::GenericArray, BlockEncrypt, KeyInit};
use aes::{Aes128, Block};
use crate::vaes::VaesKey;

/// Blocks per batch of the hash and the PRG (LOCAL): a multiple of the 16 blocks VAES encrypts
/// per iteration. `examples/aes_speed` on the 2-core Xeon VM: with batches of 8 (the former
/// value) VAES was mostly idle, 6.3 ns per PRG parent and 12.8 ns per hashed block; with 64,
/// 2.9 and 2.7 ns (the `aes` crate alone: 7.6 and 10.2 ns).
pub const PIPE: usize = 64;

const KEY_CRH: [u8; 16] = *b"nectar-ot crh k0";
const KEY_G0: [u8; 16] = *b"nectar-ot ggm g0";
const KEY_G1: [u8; 16] = *b"nectar-ot ggm g1";

/// A fixed-key AES permutation applied to `u128` blocks (little-endian byte order). Slices go
/// through VAES where the CPU has it ([`crate::vaes`]), else through the `aes` crate.
#[derive(Clone)]
pub struct FixedAes {
    aes: Aes128,
    vaes: Option<VaesKey>,
}

impl FixedAes {
    /// AES-128 under `key`.
    pub fn new(key: [u8; 16]) -> Self {
        FixedAes { aes: Aes128::new(GenericArray::from_slice(&key)), vaes: VaesKey::new(key) }
    }

    /// The `aes` crate's path only (for tests comparing the two).
    #[cfg(test)]
    fn without_vaes(key: [u8; 16]) -> Self {
        FixedAes { vaes: None, ..Self::new(key) }
    }

    /// Encrypt every block in place.
    pub fn encrypt(&self, xs: &mut [u128]) {
        match &self.vaes {
            Some(v) => v.encrypt(xs),
            None => self.encrypt_aes_crate(xs),
        }
    }

    /// [`Self::encrypt`] by the `aes` crate, which keeps [`PIPE`] blocks in flight.
    #[cfg(target_endian = "little")]
    fn encrypt_aes_crate(&self, xs: &mut [u128]) {
        // SAFETY: a `u128` on a little-endian target is its `to_le_bytes()` in memory, and
        // `Block` (`GenericArray<u8, U16>`, `repr(transparent)` over `[u8; 16]`) has size 16
        // and alignment 1 (checked below), so `xs` viewed as blocks covers exactly the same
        // bytes with no alignment requirement; the borrow of `xs` is held for the view's life.
        const _: () = assert!(std::mem::size_of::<Block>() == 16 && std::mem::align_of::<Block>() == 1);
        let blocks = unsafe { std::slice::from_raw_parts_mut(xs.as_mut_ptr() as *mut Block, xs.len()) };
        self.aes.encrypt_blocks(blocks);
    }

    /// [`Self::encrypt`] by the `aes` crate, [`PIPE`] at a time (portable byte-order conversion).
    #[cfg(not(target_endian = "little"))]
    fn encrypt_aes_crate(&self, xs: &mut [u128]) {
        let mut buf = [GenericArray::from([0u8; 16]); PIPE];
        for chunk in xs.chunks_mut(PIPE) {
            let k = chunk.len();
            for (b, x) in buf.iter_mut().zip(chunk.iter()) {
                *b = GenericArray::from(x.to_le_bytes());
            }
            self.aes.encrypt_blocks(&mut buf[..k]);
            for (x, b) in chunk.iter_mut().zip(buf.iter()) {
                *x = u128::from_le_bytes((*b).into());
            }
        }
    }

    /// Encrypt one block.
    pub fn encrypt1(&self, x: u128) -> u128 {
        let mut b = GenericArray::from(x.to_le_bytes());
        self.aes.encrypt_block(&mut b);
        u128::from_le_bytes(b.into())
    }
}

/// The hash and PRG of this crate (cheap to clone; build once per session).
#[derive(Clone)]
pub struct Crh {
    pi: FixedAes,
    g0: FixedAes,
    g1: FixedAes,
}

impl Default for Crh {
    fn default() -> Self {
        Self::new()
    }
}

impl Crh {
    pub fn new() -> Self {
        Crh { pi: FixedAes::new(KEY_CRH), g0: FixedAes::new(KEY_G0), g1: FixedAes::new(KEY_G1) }
    }

    /// `xs[i] ← H(tweaks(i), xs[i])` for every `i` (TCCR hash, see module doc).
    pub fn tccr_with(&self, xs: &mut [u128], tweak: impl Fn(usize) -> u128) {
        // Whole chunks of PIPE blocks first: fixed-size copies compile to register moves (a
        // copy of a run-time length was a `memmove` call per chunk).
        let full = xs.len() - xs.len() % PIPE;
        let (body, tail) = xs.split_at_mut(full);
        for (c, chunk) in body.chunks_exact_mut(PIPE).enumerate() {
            self.tccr_chunk(chunk, c * PIPE, &tweak);
        }
        self.tccr_chunk(tail, full, &tweak);
    }

    /// [`Self::tccr_with`] on at most [`PIPE`] blocks starting at index `at`.
    #[inline(always)]
    fn tccr_chunk(&self, chunk: &mut [u128], at: usize, tweak: &impl Fn(usize) -> u128) {
        let k = chunk.len();
        let mut a = [0u128; PIPE];
        let mut b = [0u128; PIPE];
        a[..k].copy_from_slice(chunk);
        self.pi.encrypt(&mut a[..k]);
        for j in 0..k {
            b[j] = a[j] ^ tweak(at + j);
        }
        self.pi.encrypt(&mut b[..k]);
        for j in 0..k {
            chunk[j] = a[j] ^ b[j];
        }
    }

    /// `xs[i] ← H(base + i, xs[i])`.
    pub fn tccr_seq(&self, xs: &mut [u128], base: u128) {
        self.tccr_with(xs, |i| base.wrapping_add(i as u128));
    }

    /// One TCCR evaluation.
    pub fn tccr(&self, tweak: u128, x: u128) -> u128 {
        let a = self.pi.encrypt1(x);
        self.pi.encrypt1(a ^ tweak) ^ a
    }

    /// GGM expansion of one level: `out[2i], out[2i+1] = G(parents[i])`.
    pub fn prg2(&self, parents: &[u128], out: &mut [u128]) {
        debug_assert_eq!(out.len(), 2 * parents.len());
        // Whole chunks first, as in `tccr_with`.
        let full = parents.len() - parents.len() % PIPE;
        let (body, tail) = parents.split_at(full);
        let (out_body, out_tail) = out.split_at_mut(2 * full);
        for (chunk, o) in body.chunks_exact(PIPE).zip(out_body.chunks_exact_mut(2 * PIPE)) {
            self.prg2_chunk(chunk, o);
        }
        self.prg2_chunk(tail, out_tail);
    }

    /// [`Self::prg2`] on at most [`PIPE`] parents.
    #[inline(always)]
    fn prg2_chunk(&self, chunk: &[u128], out: &mut [u128]) {
        let k = chunk.len();
        let mut l = [0u128; PIPE];
        let mut r = [0u128; PIPE];
        l[..k].copy_from_slice(chunk);
        r[..k].copy_from_slice(chunk);
        self.g0.encrypt(&mut l[..k]);
        self.g1.encrypt(&mut r[..k]);
        for j in 0..k {
            out[2 * j] = l[j] ^ chunk[j];
            out[2 * j + 1] = r[j] ^ chunk[j];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_matches_single_and_tweaks_separate() {
        let h = Crh::new();
        let mut xs: Vec<u128> = (0..21u128).map(|i| i * 0x1234_5678_9abc).collect();
        let ys = xs.clone();
        h.tccr_seq(&mut xs, 100);
        for (i, (x, y)) in xs.iter().zip(ys.iter()).enumerate() {
            assert_eq!(*x, h.tccr(100 + i as u128, *y));
        }
        assert_ne!(h.tccr(1, 5), h.tccr(2, 5));
        let mut out = vec![0u128; 42];
        h.prg2(&ys, &mut out);
        assert_ne!(out[0], out[1]);
        // Every pair, in the whole chunks and in the tail of 21 = 2·PIPE + 5 parents.
        for (i, y) in ys.iter().enumerate() {
            assert_eq!(out[2 * i], h.g0.encrypt1(*y) ^ y, "left child {i}");
            assert_eq!(out[2 * i + 1], h.g1.encrypt1(*y) ^ y, "right child {i}");
        }
        // The slice encryption (VAES where the CPU has it) equals the `aes` crate's, block by
        // block and by slice, for any length (whole groups of 16 and tails).
        let plain = FixedAes::without_vaes(KEY_CRH);
        for len in [0usize, 1, 7, 8, 9, 15, 16, 17, 33, 47, 64, 100] {
            let mut zs: Vec<u128> = (0..len as u128).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i << 100)).collect();
            let want: Vec<u128> = zs.iter().map(|&z| h.pi.encrypt1(z)).collect();
            let mut by_crate = zs.clone();
            plain.encrypt(&mut by_crate);
            h.pi.encrypt(&mut zs);
            assert_eq!(zs, want, "length {len}");
            assert_eq!(by_crate, want, "length {len}");
        }
    }

    /// FIPS-197 Appendix C.1 (AES-128): the byte order of the `u128` view is little-endian.
    #[test]
    fn aes_known_answer() {
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        let pt: [u8; 16] = core::array::from_fn(|i| (i as u8) * 0x11);
        let ct = [0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4, 0xc5, 0x5a];
        for aes in [FixedAes::new(key), FixedAes::without_vaes(key)] {
            let mut xs = [u128::from_le_bytes(pt); 19];
            aes.encrypt(&mut xs);
            assert_eq!(xs, [u128::from_le_bytes(ct); 19]);
            assert_eq!(aes.encrypt1(u128::from_le_bytes(pt)), u128::from_le_bytes(ct));
        }
    }

    /// Whether this machine runs the VAES path (the tests above then compare it with the
    /// `aes` crate); reported, not required: CI machines without VAES test the crate path.
    #[test]
    fn reports_the_path_taken() {
        let h = FixedAes::new(KEY_CRH);
        eprintln!("fixed-key AES path: {}", if h.vaes.is_some() { "VAES" } else { "aes crate" });
    }
}
