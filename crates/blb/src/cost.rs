//! Closed-form HE rotation counts of the fused linear operators under spatial-first packing
//! (BLB §4.2.1, §5.1, App. C.1–C.2), for `s = N/2` slots.
//!
//! A `(L, D)` tensor occupies `⌈L·D/s⌉` ciphertexts, each holding `c = s/L` whole columns.

/// `⌈log2 x⌉` (0 for `x ≤ 1`).
pub fn ceil_log2(x: usize) -> u32 {
    if x <= 1 {
        0
    } else {
        usize::BITS - (x - 1).leading_zeros()
    }
}

/// Ciphertexts of a `(rows, cols)` tensor in spatial-first packing.
pub fn ciphertexts(rows: usize, cols: usize, slots: usize) -> usize {
    (rows * cols).div_ceil(slots.max(1)).max(1)
}

/// Rotations of `R` rotate-multiply-accumulate steps with BSGS (BLB App. C.1): `B + G − 2`
/// with `B·G ≥ R`, `B = ⌈√R⌉` (≈ `2√R`); 0 for `R ≤ 1`.
pub fn bsgs(r: usize) -> usize {
    if r <= 1 {
        return 0;
    }
    let b = (r as f64).sqrt().ceil() as usize;
    let g = r.div_ceil(b);
    b + g - 2
}

/// Step 2 of the ct-ct matmul with its giant steps fused into step 3 (BLB App. C.1, Fig. 14):
/// `min B + 2G` over `B·G ≥ R` (≈ `2√(2R)`).
pub fn bsgs_fused(r: usize) -> usize {
    if r <= 1 {
        return 0;
    }
    (1..=r).map(|b| b + 2 * r.div_ceil(b)).min().unwrap_or(0)
}

/// Sum over the reduce dimension `d` of a `(l, d)` tensor (BLB §4.2.1, Fig. 6): the
/// ciphertexts are first added, then `⌈log2 min(d, s/l)⌉` rotate-and-add steps with strides
/// `2^(i−1)·L`. Without a mask every slot ends up holding its row's sum, so a following scalar
/// operator needs no broadcast (Table 3, "BLB w/ fusion": `log2 D` rotations, depth 0).
pub fn sum_rotations(l: usize, d: usize, slots: usize) -> usize {
    let per_ct = (slots / l.max(1)).max(1);
    ceil_log2(d.min(per_ct)) as usize
}

/// Broadcast of a `(l, 1)` ciphertext to `(l, d)` (BLB §4.2.1): `⌈log2 d⌉` rotate-and-add
/// steps (bounded by one ciphertext's columns).
pub fn broadcast_rotations(l: usize, d: usize, slots: usize) -> usize {
    sum_rotations(l, d, slots)
}

/// ct-pt matmul `(l, d_in) × (d_in, d_out)` in BOLT's diagonal method with BSGS (BLB §5.2,
/// App. C.2: the diagonal-packed variant has the same complexity): per ciphertext `R = min(c,
/// d_in)` diagonals; baby steps are rotations of each input ciphertext, giant steps of each
/// output ciphertext: `min_B n_in·(B−1) + n_out·(G−1)` with `G = ⌈R/B⌉`.
pub fn matmul_cp_rotations(l: usize, d_in: usize, d_out: usize, slots: usize) -> usize {
    let c = (slots / l.max(1)).max(1);
    let r = c.min(d_in);
    if r <= 1 {
        return 0;
    }
    let n_in = ciphertexts(l, d_in, slots);
    let n_out = ciphertexts(l, d_out, slots);
    (1..=r)
        .map(|b| n_in * (b - 1) + n_out * (r.div_ceil(b) - 1))
        .min()
        .unwrap_or(0)
}

/// Geometry of BLB's ct-ct matmul with multi-head packing (§5.1): `heads` products
/// `(l, d) × (d, l)`, each ciphertext holding `(l, h', c)`: `h'` heads, `c` reduce indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulCcShape {
    /// Heads per ciphertext.
    pub heads_per_ct: usize,
    /// Reduce indices (columns of `A`, rows of `B`) per head per ciphertext.
    pub c: usize,
    /// Ciphertexts of each operand.
    pub n: usize,
    /// Head groups (ciphertexts that cannot be summed before step 3).
    pub groups: usize,
}

/// The packing of [`matmul_cc_rotations`].
pub fn matmul_cc_shape(l: usize, d: usize, heads: usize, slots: usize) -> MatmulCcShape {
    let heads = heads.max(1);
    let heads_per_ct = (slots / l.max(1)).clamp(1, heads);
    let groups = heads.div_ceil(heads_per_ct);
    let c = (slots / (l.max(1) * heads_per_ct)).clamp(1, d.max(1));
    let n = d.max(1).div_ceil(c) * groups;
    MatmulCcShape {
        heads_per_ct,
        c,
        n,
        groups,
    }
}

/// Rotations of BLB's ct-ct matmul with multi-head packing and BSGS (§5.1, App. C.1), our
/// closed form:
/// - step 1 (pre-rotate row `k` of `B` by `k`): the offset shared by a ciphertext's rows is
///   absorbed into step 2's shift, leaving `c` relative offsets: `2·bsgs(c)` rotations per
///   ciphertext (an inner rotation is two masked rotations); 0 when `B` comes from MPC and is
///   pre-rotated while its shares are repacked (§5.2);
/// - step 2 (inner-rotate by `t ∈ [l]`, multiply): `min B + 2G`, `B·G ≥ l` per ciphertext of
///   `B`, the giant steps fused into step 3 (App. C.1);
/// - step 3 (align the diagonals and sum): with multi-head packing the partial sums of one
///   diagonal are aligned, so the ciphertexts are summed first: `l` rotations per head group.
pub fn matmul_cc_rotations(
    l: usize,
    d: usize,
    heads: usize,
    slots: usize,
    b_from_mpc: bool,
) -> usize {
    let g = matmul_cc_shape(l, d, heads, slots);
    let step1 = if b_from_mpc { 0 } else { g.n * 2 * bsgs(g.c) };
    let step2 = g.n * bsgs_fused(l);
    let step3 = l * g.groups;
    step1 + step2 + step3
}

/// ct-ct multiplications of the same protocol: one per ciphertext of `B` and shift `t`
/// (BLB Table 5: `md/s · m`).
pub fn matmul_cc_products(l: usize, d: usize, heads: usize, slots: usize) -> usize {
    matmul_cc_shape(l, d, heads, slots).n * l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_formulas() {
        assert_eq!(ceil_log2(1), 0);
        assert_eq!(ceil_log2(768), 10);
        assert_eq!(ceil_log2(1024), 10);
        assert_eq!(bsgs(128), 12 + 11 - 2);
        assert_eq!(bsgs(1), 0);
        assert_eq!(bsgs_fused(128), 32);
        assert_eq!(bsgs_fused(64), 23);
        assert_eq!(sum_rotations(128, 768, 16384), 7);
        assert_eq!(sum_rotations(8, 768, 8192), 10);
        // One ciphertext in and out: exactly B + G − 2.
        assert_eq!(matmul_cp_rotations(128, 64, 64, 8192), bsgs(64));
    }

    /// BLB Table 5's ct-ct multiplication counts for BERT-large, 128 tokens, s = 16384:
    /// `Q_h K_h^T` 1024 and `Softmax × V_h` 2048 (`V_h` padded to `l` columns).
    #[test]
    fn product_counts_match_table5() {
        assert_eq!(matmul_cc_products(128, 64, 16, 16384), 1024);
        assert_eq!(matmul_cc_products(128, 128, 16, 16384), 2048);
    }
}
