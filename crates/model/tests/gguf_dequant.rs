//! Dequantisation of hand-built blocks (`nectar_model::gguf::dequant`): each supported type's
//! block written field by field with chosen scales, minimums and quants (the 6-bit packed
//! scales of Q4_K / Q5_K, Q5_K's fifth bits, Q6_K's split 6-bit quants and signed scales), and
//! every dequantised float checked exactly against the format's formula.

use nectar_model::gguf::dequant::{dequantize, GgmlType};


fn f16(x: f32) -> [u8; 2] {
    // Exact for the small dyadic values used below (no rounding needed).
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    if x == 0.0 {
        return sign.to_le_bytes();
    }
    let exp = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let man = ((bits >> 13) & 0x3ff) as u16;
    assert!((1..31).contains(&exp) && bits & 0x1fff == 0, "{x} is not an exact normal f16");
    (sign | ((exp as u16) << 10) | man).to_le_bytes()
}

#[test]
fn simple_types() {
    let mut b = f32::to_le_bytes(-1.5).to_vec();
    b.extend(f32::to_le_bytes(2.25));
    assert_eq!(dequantize(GgmlType::F32, &b, 2).unwrap(), [-1.5, 2.25]);
    let b = [f16(0.5), f16(-3.0)].concat();
    assert_eq!(dequantize(GgmlType::F16, &b, 2).unwrap(), [0.5, -3.0]);
    let b = [0x80u16, 0x3fc0].iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>();
    assert_eq!(dequantize(GgmlType::Bf16, &b, 2).unwrap(), [2f32.powi(-126), 1.5]);
}

#[test]
fn q8_0_block() {
    let mut b = f16(0.25).to_vec();
    b.extend((0..32).map(|i| (i as i8 - 16) as u8));
    let y = dequantize(GgmlType::Q8_0, &b, 32).unwrap();
    let want: Vec<f32> = (0..32).map(|i| 0.25 * (i - 16) as f32).collect();
    assert_eq!(y, want);
}

#[test]
fn q4_0_and_q4_1_blocks() {
    // Byte j: low nibble j % 16, high nibble 15 - j % 16.
    let nibbles: Vec<u8> = (0..16u8).map(|j| j | ((15 - j) << 4)).collect();
    let b = [f16(2.0).as_slice(), &nibbles].concat();
    let y = dequantize(GgmlType::Q4_0, &b, 32).unwrap();
    for j in 0..16 {
        assert_eq!(y[j], 2.0 * (j as f32 - 8.0));
        assert_eq!(y[j + 16], 2.0 * (7.0 - j as f32));
    }
    let b = [f16(0.5).as_slice(), &f16(-1.0), &nibbles].concat();
    let y = dequantize(GgmlType::Q4_1, &b, 32).unwrap();
    for j in 0..16 {
        assert_eq!(y[j], 0.5 * j as f32 - 1.0);
        assert_eq!(y[j + 16], 0.5 * (15 - j) as f32 - 1.0);
    }
}

/// Packs 8 (scale, min) pairs of 6 bits as Q4_K / Q5_K store them.
fn pack_scales(s: [u8; 8], m: [u8; 8]) -> [u8; 12] {
    let mut p = [0u8; 12];
    for j in 0..4 {
        p[j] = s[j] | ((s[j + 4] >> 4) << 6);
        p[j + 4] = m[j] | ((m[j + 4] >> 4) << 6);
        p[j + 8] = (s[j + 4] & 0x0f) | ((m[j + 4] & 0x0f) << 4);
    }
    p
}

const SC: [u8; 8] = [1, 2, 63, 17, 32, 5, 48, 60];
const MN: [u8; 8] = [0, 3, 62, 16, 33, 47, 1, 63];

#[test]
fn q4_k_block() {
    let (d, dmin) = (0.5f32, 0.25f32);
    // Element e's quant: (e * 7) % 16.
    let q = |e: usize| ((e * 7) % 16) as u8;
    let mut qs = [0u8; 128];
    for r in 0..4 {
        for l in 0..32 {
            qs[32 * r + l] = q(64 * r + l) | (q(64 * r + 32 + l) << 4);
        }
    }
    let b = [f16(d).as_slice(), &f16(dmin), &pack_scales(SC, MN), &qs].concat();
    let y = dequantize(GgmlType::Q4K, &b, 256).unwrap();
    for (e, &v) in y.iter().enumerate() {
        let s = e / 32;
        assert_eq!(v, d * SC[s] as f32 * q(e) as f32 - dmin * MN[s] as f32, "element {e}");
    }
}

#[test]
fn q5_k_block() {
    let (d, dmin) = (0.125f32, 1.0f32);
    let q = |e: usize| ((e * 11 + 3) % 32) as u8;
    let (mut qs, mut qh) = ([0u8; 128], [0u8; 32]);
    for e in 0..256 {
        let (s, l) = (e / 32, e % 32);
        let (r, hi) = (s / 2, s % 2);
        qs[32 * r + l] |= (q(e) & 0x0f) << (4 * hi);
        qh[l] |= (q(e) >> 4) << s;
    }
    let b = [f16(d).as_slice(), &f16(dmin), &pack_scales(SC, MN), &qh, &qs].concat();
    let y = dequantize(GgmlType::Q5K, &b, 256).unwrap();
    for (e, &v) in y.iter().enumerate() {
        let s = e / 32;
        assert_eq!(v, d * SC[s] as f32 * q(e) as f32 - dmin * MN[s] as f32, "element {e}");
    }
}

#[test]
fn q6_k_block() {
    let d = 0.0625f32;
    let q = |e: usize| ((e * 13 + 5) % 64) as u8;
    let scales: [i8; 16] = [1, -2, 3, -4, 127, -128, 7, 8, -9, 10, 11, -12, 13, 14, -15, 16];
    let (mut ql, mut qh) = ([0u8; 128], [0u8; 64]);
    for e in 0..256 {
        let (h, w) = (e / 128, e % 128);
        let (k, l) = (w / 32, w % 32);
        ql[64 * h + l + 32 * (k % 2)] |= (q(e) & 0x0f) << (4 * (k / 2));
        qh[32 * h + l] |= (q(e) >> 4) << (2 * k);
    }
    let sc: Vec<u8> = scales.iter().map(|&s| s as u8).collect();
    let b = [ql.as_slice(), &qh, &sc, &f16(d)].concat();
    let y = dequantize(GgmlType::Q6K, &b, 256).unwrap();
    for (e, &v) in y.iter().enumerate() {
        let s = scales[e / 16];
        assert_eq!(v, d * s as f32 * (q(e) as i32 - 32) as f32, "element {e}");
    }
}

#[test]
fn wrong_sizes_and_types_are_errors() {
    let e = dequantize(GgmlType::Q4_0, &[0u8; 17], 32).unwrap_err();
    assert_eq!(e, "Q4_0 data of 17 bytes does not hold 32 elements (18 bytes per 32)");
    assert!(dequantize(GgmlType::Q8_0, &[0u8; 34], 31).is_err());
    let e = dequantize(GgmlType::Q2K, &[0u8; 84], 256).unwrap_err();
    assert!(e.starts_with("type Q2_K is not supported (supported: F32, F16, BF16"), "{e}");
    for id in 0..64 {
        if let Some(t) = GgmlType::from_id(id) {
            assert!(t.block().0 >= 1 && t.block().1 >= 1);
        }
    }
}
