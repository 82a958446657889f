//! Π_Rotate: secret-shared rotation of bit vectors from **one** punctured PRF (ROTL §III,
//! Fig. 10; REFERENCE.md §4.2), batched over many rotations.
//!
//! The client C holds a bit vector `x` of length `n = 2^h`; the server S ends with a uniformly
//! random offset `p ∈ Z_n` (the random punctured point of a half-tree PPRF, ROTL §IV-B
//! "optimisation", [`nectar_ot::half_tree`]); the outputs are XOR shares of `y = rotL(x, p)`,
//! `y_i = x_{(i + p) mod n}`.
//!
//! Conventions fixed here (the paper mixes `≫ s` with `π(i) = i + s` and writes "element-wise
//! addition" for what its proof uses as XOR; REFERENCE.md §8):
//! - `rotR(v, k)_j = v_{(j − k) mod n}` (right rotation), `rotL(v, k) = rotR(v, n − k)`;
//! - all sums are XOR (bit vectors, as ROTL uses the protocol).
//!
//! Steps (one PPRF per rotation, C the PPRF sender with every leaf, S the receiver):
//! 1. C expands leaf `k` into the slant column `d_k ∈ {0,1}^n`, `r = ⊕_k d_k`,
//!    `a = ⊕_k rotR(d_k, k)` (the column sums of the rotated matrix without building it);
//! 2. S does the same with its leaves (`d_p` unknown, taken as 0): `r*`, `a*`;
//! 3. C sends `x ⊕ a` (rides in the same flow as the PPRF message) and outputs `r`;
//! 4. S outputs `rotL(x ⊕ a ⊕ a*, p) ⊕ r*`.
//!
//! Correctness: `a ⊕ a* = rotR(d_p, p)` and `r ⊕ r* = d_p`, so the XOR of the outputs is
//! `rotL(x, p) ⊕ rotL(rotR(d_p, p), p) ⊕ d_p = rotL(x, p)`.
//!
//! Cost per rotation: `h` random COTs, `128·h + n` bits C → S, one flow (nothing S → C);
//! local: `2^h` tree hashes plus `2^h·⌈n/128⌉` output hashes (2 AES each) and `n` rotations of
//! `n`-bit words per party.

use crate::{Mpc, MpcError, Result};
use nectar_net::{Channel, Role};
use nectar_ot::bits::{pack_words, unpack_words};

/// Largest table-size exponent `h` (`n = 2^h`; LOCAL: the PPRF expansion is `O(n²)` hashes).
pub const MAX_LOG_N: u32 = 12;

/// Rotations per PPRF call (LOCAL: bounds the sender's expanded leaves to about 32 MiB).
fn chunk_rows(h: u32) -> usize {
    let n = 1usize << h;
    ((1usize << 21) / (n * n.div_ceil(128))).max(1)
}

/// `count` bit rows of length `n = 2^h`, `⌈n/64⌉` little-endian words each (bit `j` of a row
/// is bit `j % 64` of word `j / 64`; bits at and above `n` are zero).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitRows {
    h: u32,
    words: Vec<u64>,
}

impl BitRows {
    /// `count` zero rows of length `2^h`.
    pub fn zeros(h: u32, count: usize) -> Result<Self> {
        check_h(h)?;
        Ok(BitRows { h, words: vec![0; count * words_per_row(h)] })
    }

    /// Rows from their words (`count · ⌈2^h/64⌉` words).
    pub fn from_words(h: u32, words: Vec<u64>) -> Result<Self> {
        check_h(h)?;
        let w = words_per_row(h);
        if !words.len().is_multiple_of(w) {
            return Err(MpcError::Length { what: "bit rows", expected: words.len().next_multiple_of(w), got: words.len() });
        }
        let m = row_mask(h);
        if words.chunks(w).any(|r| r[w - 1] & !m != 0) {
            return Err(MpcError::BadArgument(format!("bit row has bits beyond n = 2^{h}")));
        }
        Ok(BitRows { h, words })
    }

    /// `log2` of the row length.
    pub fn log_n(&self) -> u32 {
        self.h
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.words.len() / words_per_row(self.h)
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Row `i` as words.
    pub fn row(&self, i: usize) -> &[u64] {
        let w = words_per_row(self.h);
        &self.words[i * w..(i + 1) * w]
    }

    /// Bit `j` of row `i`.
    pub fn bit(&self, i: usize, j: usize) -> bool {
        self.row(i)[j / 64] >> (j % 64) & 1 == 1
    }

    /// All words, row-major.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Keeps rows `k..` and returns rows `..k` (the first `k` in order).
    pub(crate) fn split_front(&mut self, k: usize) -> BitRows {
        let w = words_per_row(self.h);
        let rest = self.words.split_off(k * w);
        BitRows { h: self.h, words: std::mem::replace(&mut self.words, rest) }
    }

    /// Appends the rows of `o` (same length).
    pub(crate) fn append(&mut self, o: BitRows) {
        debug_assert_eq!(self.h, o.h);
        self.words.extend(o.words);
    }
}

fn check_h(h: u32) -> Result<()> {
    if !(1..=MAX_LOG_N).contains(&h) {
        return Err(MpcError::BadArgument(format!("rotation length 2^{h}: log n must be in 1..={MAX_LOG_N}")));
    }
    Ok(())
}

pub(crate) fn words_per_row(h: u32) -> usize {
    (1usize << h).div_ceil(64)
}

/// Mask of the valid bits of a row's last word.
fn row_mask(h: u32) -> u64 {
    if h >= 6 {
        u64::MAX
    } else {
        (1u64 << (1u32 << h)) - 1
    }
}

/// `out = rotR(v, k)` on `n = 2^h` bits (`out_j = v_{(j − k) mod n}`), `k < n`.
pub fn rot_right(h: u32, v: &[u64], k: usize, out: &mut [u64]) {
    let n = 1usize << h;
    debug_assert!(k < n);
    if h < 6 {
        let x = v[0];
        out[0] = if k == 0 { x } else { ((x << k) | (x >> (n - k))) & row_mask(h) };
        return;
    }
    let w = n / 64;
    let (q, r) = (k / 64, (k % 64) as u32);
    for (j, o) in out.iter_mut().enumerate().take(w) {
        let a = v[(j + w - q) % w];
        *o = if r == 0 { a } else { (a << r) | (v[(j + 2 * w - q - 1) % w] >> (64 - r)) };
    }
}

/// `out = rotL(v, k)` (`out_j = v_{(j + k) mod n}`).
pub fn rot_left(h: u32, v: &[u64], k: usize, out: &mut [u64]) {
    let n = 1usize << h;
    rot_right(h, v, (n - k % n) % n, out)
}

/// `acc ^= rotR(v, k)`.
fn xor_rot_right(h: u32, v: &[u64], k: usize, acc: &mut [u64], tmp: &mut [u64]) {
    rot_right(h, v, k, tmp);
    for (a, t) in acc.iter_mut().zip(tmp.iter()) {
        *a ^= t;
    }
}

/// `r = ⊕_k d_k` and `a = ⊕_k rotR(d_k, k)` of one PPRF's slant columns, where `d_k` is the
/// first `n` bits of leaf `k`'s `width` output blocks.
fn row_and_column_sums(h: u32, leaves: &[u128], width: usize) -> (Vec<u64>, Vec<u64>) {
    let n = 1usize << h;
    let w = words_per_row(h);
    let (mut r, mut a, mut d, mut tmp) = (vec![0u64; w], vec![0u64; w], vec![0u64; w], vec![0u64; w]);
    for k in 0..n {
        let blocks = &leaves[k * width..(k + 1) * width];
        for (j, dj) in d.iter_mut().enumerate() {
            let b = blocks[j / 2];
            *dj = if j % 2 == 0 { b as u64 } else { (b >> 64) as u64 };
        }
        d[w - 1] &= row_mask(h);
        for (x, y) in r.iter_mut().zip(&d) {
            *x ^= y;
        }
        xor_rot_right(h, &d, k, &mut a, &mut tmp);
    }
    (r, a)
}

fn to_wire(h: u32, words: &[u64]) -> Vec<u8> {
    let k = (1usize << h).min(64);
    let xs: Vec<u128> = words.iter().map(|&x| x as u128).collect();
    pack_words(&xs, k)
}

fn from_wire(h: u32, bytes: &[u8], rows: usize) -> Result<Vec<u64>> {
    let k = (1usize << h).min(64);
    Ok(unpack_words(bytes, rows * words_per_row(h), k)?.into_iter().map(|x| x as u64).collect())
}

impl Mpc {
    /// Π_Rotate, client side: XOR shares (the client's) of `rotL(x_i, p_i)` for every row `x_i`
    /// of `x`, where the offsets `p_i` end up with the server ([`Mpc::rotate_bits_server`]).
    pub fn rotate_bits_client(&mut self, ch: &mut dyn Channel, x: &BitRows) -> Result<BitRows> {
        if self.role() != Role::Client {
            return Err(MpcError::BadArgument("Π_Rotate: the client holds the vector".into()));
        }
        let h = x.log_n();
        let width = (1usize << h).div_ceil(128);
        let mut out = Vec::with_capacity(x.words().len());
        let w = words_per_row(h);
        let mut start = 0;
        while start < x.len() {
            let end = (start + chunk_rows(h)).min(x.len());
            let trees = self.ot().send_pprf_random(ch, end - start, h as usize, width)?;
            let mut masked = Vec::with_capacity((end - start) * w);
            for (t, leaves) in trees.iter().enumerate() {
                let (r, a) = row_and_column_sums(h, leaves, width);
                masked.extend(x.row(start + t).iter().zip(&a).map(|(xi, ai)| xi ^ ai));
                out.extend(r);
            }
            ch.send(&to_wire(h, &masked))?;
            start = end;
        }
        BitRows::from_words(h, out)
    }

    /// Π_Rotate, server side for `count` rows of length `2^h`: the random offsets `p_i` and the
    /// server's XOR shares of `rotL(x_i, p_i)`.
    pub fn rotate_bits_server(&mut self, ch: &mut dyn Channel, h: u32, count: usize) -> Result<(Vec<usize>, BitRows)> {
        check_h(h)?;
        if self.role() != Role::Server {
            return Err(MpcError::BadArgument("Π_Rotate: the server holds the offset".into()));
        }
        let width = (1usize << h).div_ceil(128);
        let w = words_per_row(h);
        let mut offsets = Vec::with_capacity(count);
        let mut out = Vec::with_capacity(count * w);
        let (mut m, mut tmp) = (vec![0u64; w], vec![0u64; w]);
        let mut start = 0;
        while start < count {
            let end = (start + chunk_rows(h)).min(count);
            let trees = self.ot().recv_pprf_random(ch, end - start, h as usize, width)?;
            let masked = from_wire(h, &ch.recv()?, end - start)?;
            for (t, (p, leaves)) in trees.iter().enumerate() {
                let (rs, a_s) = row_and_column_sums(h, leaves, width);
                for j in 0..w {
                    m[j] = masked[t * w + j] ^ a_s[j];
                }
                rot_left(h, &m, *p, &mut tmp);
                out.extend(tmp.iter().zip(&rs).map(|(y, r)| y ^ r));
                offsets.push(*p);
            }
            start = end;
        }
        Ok((offsets, BitRows::from_words(h, out)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(h: u32, v: &[u64]) -> Vec<bool> {
        (0..1usize << h).map(|j| v[j / 64] >> (j % 64) & 1 == 1).collect()
    }

    #[test]
    fn rotations_match_the_definition() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for h in 1..=9 {
            let n = 1usize << h;
            let w = words_per_row(h);
            let mut v: Vec<u64> = (0..w)
                .map(|_| {
                    s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    s
                })
                .collect();
            v[w - 1] &= row_mask(h);
            let vb = bits(h, &v);
            let mut out = vec![0; w];
            for k in 0..n {
                rot_right(h, &v, k, &mut out);
                let ob = bits(h, &out);
                assert!((0..n).all(|j| ob[j] == vb[(j + n - k) % n]), "rotR h={h} k={k}");
                assert_eq!(out[w - 1] & !row_mask(h), 0);
                rot_left(h, &v, k, &mut out);
                let ob = bits(h, &out);
                assert!((0..n).all(|j| ob[j] == vb[(j + k) % n]), "rotL h={h} k={k}");
            }
        }
    }
}
