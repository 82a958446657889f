//! GGML tensor types and their dequantisation to `f32`.
//!
//! The block layouts are ggml's (the GGUF specification, `docs/gguf.md` of ggml, and the block
//! structs of `ggml-common.h`), written here from that description; all fields are little-endian
//! and a block's scale `d` (and minimum `m`) is an IEEE binary16 unless stated:
//!
//! | type | block | bytes | layout (in file order) | value |
//! |---|---|---|---|---|
//! | F32, F16, BF16 | 1 | 4, 2, 2 | the number | itself |
//! | Q4_0 | 32 | 18 | `d`, 16 bytes of nibbles | `d·(q − 8)` |
//! | Q4_1 | 32 | 20 | `d`, `m`, 16 bytes of nibbles | `d·q + m` |
//! | Q8_0 | 32 | 34 | `d`, 32 × i8 | `d·q` |
//! | Q4_K | 256 | 144 | `d`, `dmin`, 12 bytes of 6-bit scales/mins, 128 bytes of nibbles | `d·sc·q − dmin·mn` |
//! | Q5_K | 256 | 176 | `d`, `dmin`, 12 bytes of scales/mins, 32 bytes of high bits, 128 bytes of nibbles | `d·sc·q − dmin·mn` |
//! | Q6_K | 256 | 210 | 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 × i8 scales, `d` | `d·sc·(q − 32)` |
//!
//! In the 32-element types, byte `j` of the nibbles holds element `j` (low nibble) and element
//! `j + 16` (high nibble). The K-quants split a 256-element super-block into sub-blocks of 32
//! (Q4_K, Q5_K: 8 sub-blocks with a 6-bit scale and a 6-bit minimum each) or 16 (Q6_K: a signed
//! 8-bit scale each); see each function for how the bits are packed. Arithmetic is in `f32` in
//! the order the formulas above state (the products first, then the sum), so the results equal
//! ggml's reference dequantisation and the `gguf` Python package's bit for bit.

use crate::weights::{bf16_to_f32, f16_to_f32};

/// A GGML tensor type, by its id in the GGUF tensor index (`enum ggml_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GgmlType {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2K,
    Q3K,
    Q4K,
    Q5K,
    Q6K,
    Q8K,
    I8,
    I16,
    I32,
    I64,
    F64,
    Bf16,
}

/// Elements of a K-quant super-block (`QK_K`).
pub const QK_K: usize = 256;

impl GgmlType {
    /// The type of id `id`, if nectar knows its block size (types it cannot dequantise included,
    /// so that a file holding them still opens and says which tensor it cannot read).
    pub fn from_id(id: u32) -> Option<Self> {
        Some(match id {
            0 => GgmlType::F32,
            1 => GgmlType::F16,
            2 => GgmlType::Q4_0,
            3 => GgmlType::Q4_1,
            6 => GgmlType::Q5_0,
            7 => GgmlType::Q5_1,
            8 => GgmlType::Q8_0,
            9 => GgmlType::Q8_1,
            10 => GgmlType::Q2K,
            11 => GgmlType::Q3K,
            12 => GgmlType::Q4K,
            13 => GgmlType::Q5K,
            14 => GgmlType::Q6K,
            15 => GgmlType::Q8K,
            24 => GgmlType::I8,
            25 => GgmlType::I16,
            26 => GgmlType::I32,
            27 => GgmlType::I64,
            28 => GgmlType::F64,
            30 => GgmlType::Bf16,
            _ => return None,
        })
    }

    /// ggml's name of the type (`Q4_K`, `BF16`...).
    pub fn name(self) -> &'static str {
        match self {
            GgmlType::F32 => "F32",
            GgmlType::F16 => "F16",
            GgmlType::Q4_0 => "Q4_0",
            GgmlType::Q4_1 => "Q4_1",
            GgmlType::Q5_0 => "Q5_0",
            GgmlType::Q5_1 => "Q5_1",
            GgmlType::Q8_0 => "Q8_0",
            GgmlType::Q8_1 => "Q8_1",
            GgmlType::Q2K => "Q2_K",
            GgmlType::Q3K => "Q3_K",
            GgmlType::Q4K => "Q4_K",
            GgmlType::Q5K => "Q5_K",
            GgmlType::Q6K => "Q6_K",
            GgmlType::Q8K => "Q8_K",
            GgmlType::I8 => "I8",
            GgmlType::I16 => "I16",
            GgmlType::I32 => "I32",
            GgmlType::I64 => "I64",
            GgmlType::F64 => "F64",
            GgmlType::Bf16 => "BF16",
        }
    }

    /// (elements per block, bytes per block).
    pub fn block(self) -> (usize, usize) {
        match self {
            GgmlType::F32 | GgmlType::I32 => (1, 4),
            GgmlType::F16 | GgmlType::Bf16 | GgmlType::I16 => (1, 2),
            GgmlType::I8 => (1, 1),
            GgmlType::I64 | GgmlType::F64 => (1, 8),
            GgmlType::Q4_0 => (32, 18),
            GgmlType::Q4_1 => (32, 20),
            GgmlType::Q5_0 => (32, 22),
            GgmlType::Q5_1 => (32, 24),
            GgmlType::Q8_0 => (32, 34),
            GgmlType::Q8_1 => (32, 36),
            GgmlType::Q2K => (QK_K, 84),
            GgmlType::Q3K => (QK_K, 110),
            GgmlType::Q4K => (QK_K, 144),
            GgmlType::Q5K => (QK_K, 176),
            GgmlType::Q6K => (QK_K, 210),
            GgmlType::Q8K => (QK_K, 292),
        }
    }

    /// Whether [`dequantize`] reads this type.
    pub fn is_supported(self) -> bool {
        SUPPORTED.contains(&self)
    }
}

/// The types [`dequantize`] reads.
pub const SUPPORTED: [GgmlType; 9] = [
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::Bf16,
    GgmlType::Q8_0,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q4K,
    GgmlType::Q5K,
    GgmlType::Q6K,
];

/// `n` elements of type `ty` from their bytes, as `f32`. Errors (one line, without the file
/// name, which the caller adds) when `bytes` does not hold exactly `n` elements or the type is
/// not one of [`SUPPORTED`].
pub fn dequantize(ty: GgmlType, bytes: &[u8], n: usize) -> Result<Vec<f32>, String> {
    let (per, size) = ty.block();
    if !n.is_multiple_of(per) || bytes.len() != (n / per).saturating_mul(size) {
        return Err(format!(
            "{} data of {} bytes does not hold {n} elements ({size} bytes per {per})",
            ty.name(),
            bytes.len()
        ));
    }
    use rayon::prelude::*;
    let mut out = vec![0f32; n];
    // In parallel: a decoding step reads every tensor again (the server keeps the file, not
    // its dequantised copy).
    let blocks = bytes.par_chunks_exact(size).zip(out.par_chunks_exact_mut(per)).with_min_len(1024);
    match ty {
        GgmlType::F32 => blocks.for_each(|(b, y)| y[0] = f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        GgmlType::F16 => blocks.for_each(|(b, y)| y[0] = f16_to_f32(u16::from_le_bytes([b[0], b[1]]))),
        GgmlType::Bf16 => blocks.for_each(|(b, y)| y[0] = bf16_to_f32(u16::from_le_bytes([b[0], b[1]]))),
        GgmlType::Q8_0 => blocks.for_each(|(b, y)| q8_0(b, y)),
        GgmlType::Q4_0 => blocks.for_each(|(b, y)| q4_0(b, y)),
        GgmlType::Q4_1 => blocks.for_each(|(b, y)| q4_1(b, y)),
        GgmlType::Q4K => blocks.for_each(|(b, y)| q4_k(b, y)),
        GgmlType::Q5K => blocks.for_each(|(b, y)| q5_k(b, y)),
        GgmlType::Q6K => blocks.for_each(|(b, y)| q6_k(b, y)),
        other => {
            return Err(format!(
                "type {} is not supported (supported: {})",
                other.name(),
                SUPPORTED.map(GgmlType::name).join(", ")
            ))
        }
    }
    Ok(out)
}

fn half(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// Q8_0: `d` (f16) then 32 signed bytes.
fn q8_0(b: &[u8], y: &mut [f32]) {
    let d = half(b, 0);
    for (v, &q) in y.iter_mut().zip(&b[2..34]) {
        *v = d * (q as i8) as f32;
    }
}

/// Q4_0: `d` then 16 bytes; element `j` is the low nibble of byte `j`, element `j + 16` its
/// high nibble, both offset by 8.
fn q4_0(b: &[u8], y: &mut [f32]) {
    let d = half(b, 0);
    for (j, &q) in b[2..18].iter().enumerate() {
        y[j] = d * ((q & 0x0f) as i32 - 8) as f32;
        y[j + 16] = d * ((q >> 4) as i32 - 8) as f32;
    }
}

/// Q4_1: `d`, `m`, then 16 bytes of unsigned nibbles laid out as in Q4_0.
fn q4_1(b: &[u8], y: &mut [f32]) {
    let (d, m) = (half(b, 0), half(b, 2));
    for (j, &q) in b[4..20].iter().enumerate() {
        y[j] = d * (q & 0x0f) as f32 + m;
        y[j + 16] = d * (q >> 4) as f32 + m;
    }
}

/// The 6-bit scale and minimum of sub-block `j` (0..8) of Q4_K / Q5_K from their 12 packed
/// bytes: sub-blocks 0..4 keep theirs in the low 6 bits of bytes `j` (scale) and `j + 4`
/// (minimum); sub-blocks 4..8 keep their low 4 bits in the nibbles of byte `j + 4` (scale low,
/// minimum high) and their top 2 bits in the top 2 bits of bytes `j − 4` (scale) and `j`
/// (minimum).
fn scale_min_k4(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        ((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4))
    }
}

/// Q4_K: `d`, `dmin`, 12 scale bytes, then 128 bytes covering the super-block in four runs of
/// 64 elements: run `r` takes bytes `32r..32r+32`, its first 32 elements (sub-block `2r`) from
/// their low nibbles, the next 32 (sub-block `2r + 1`) from their high nibbles.
fn q4_k(b: &[u8], y: &mut [f32]) {
    let (d, dmin) = (half(b, 0), half(b, 2));
    let scales = &b[4..16];
    let qs = &b[16..144];
    for r in 0..4 {
        let (s0, m0) = scale_min_k4(2 * r, scales);
        let (s1, m1) = scale_min_k4(2 * r + 1, scales);
        let (d0, dm0) = (d * s0 as f32, dmin * m0 as f32);
        let (d1, dm1) = (d * s1 as f32, dmin * m1 as f32);
        for l in 0..32 {
            let q = qs[32 * r + l];
            y[64 * r + l] = d0 * (q & 0x0f) as f32 - dm0;
            y[64 * r + 32 + l] = d1 * (q >> 4) as f32 - dm1;
        }
    }
}

/// Q5_K: `d`, `dmin`, 12 scale bytes, 32 bytes `qh` of fifth bits, 128 bytes of nibbles laid
/// out as in Q4_K. Element `l` of sub-block `s` takes bit `s` of `qh[l]` as its value's bit 4.
fn q5_k(b: &[u8], y: &mut [f32]) {
    let (d, dmin) = (half(b, 0), half(b, 2));
    let scales = &b[4..16];
    let qh = &b[16..48];
    let qs = &b[48..176];
    for r in 0..4 {
        let (s0, m0) = scale_min_k4(2 * r, scales);
        let (s1, m1) = scale_min_k4(2 * r + 1, scales);
        let (d0, dm0) = (d * s0 as f32, dmin * m0 as f32);
        let (d1, dm1) = (d * s1 as f32, dmin * m1 as f32);
        for l in 0..32 {
            let q = qs[32 * r + l];
            let lo = (q & 0x0f) | (((qh[l] >> (2 * r)) & 1) << 4);
            let hi = (q >> 4) | (((qh[l] >> (2 * r + 1)) & 1) << 4);
            y[64 * r + l] = d0 * lo as f32 - dm0;
            y[64 * r + 32 + l] = d1 * hi as f32 - dm1;
        }
    }
}

/// Q6_K: 128 bytes `ql` of low nibbles, 64 bytes `qh` of high bit pairs, 16 signed scales (one
/// per 16 elements), then `d`. Each half `h` of 128 elements uses `ql[64h..64h+64]`,
/// `qh[32h..32h+32]` and scales `8h..8h+8`; within it, element `l + 32k` (`l` < 32, `k` < 4)
/// takes its low 4 bits from the low (`k` = 0, 1) or high (`k` = 2, 3) nibble of
/// `ql[l + 32·(k mod 2)]`, its top 2 bits from bits `2k..2k+2` of `qh[l]`, and scale
/// `l / 16 + 2k`; the 6-bit value is offset by 32.
fn q6_k(b: &[u8], y: &mut [f32]) {
    let (ql, qh, sc) = (&b[0..128], &b[128..192], &b[192..208]);
    let d = half(b, 208);
    for h in 0..2 {
        let (ql, qh, sc) = (&ql[64 * h..], &qh[32 * h..], &sc[8 * h..]);
        for l in 0..32 {
            for k in 0..4 {
                let low = ql[l + 32 * (k % 2)];
                let nib = if k < 2 { low & 0x0f } else { low >> 4 };
                let q = (nib | (((qh[l] >> (2 * k)) & 3) << 4)) as i32 - 32;
                let s = sc[l / 16 + 2 * k] as i8;
                y[128 * h + l + 32 * k] = d * s as f32 * q as f32;
            }
        }
    }
}
