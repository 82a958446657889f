//! BLB's operator vocabulary (BLB §4.1, Table 2), the four mapping categories, the Table 4
//! fusion patterns and the Table 6 CKKS parameter sets, as data.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Mapping type of an operator on a `(L, D)` tensor (BLB §4.1): `L` is the spatial dimension
/// (computed in parallel), `D` the reduce dimension (aggregated).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// `(L, D) → (L, D)`, element-wise; the packing is unchanged.
    Identity,
    /// `(L, 1) → (L, D)`: a broadcast, as in scalar addition / multiplication.
    Expansion,
    /// `(L, D) → (L, 1)`: an aggregation, as in a sum.
    Reduction,
    /// `(L, D) → (L, D')`: the reduce dimension is transformed, as in a matmul.
    Transformation,
}

impl Category {
    /// Every category, in Table 4's row / column order.
    pub const ALL: [Category; 4] = [
        Category::Identity,
        Category::Expansion,
        Category::Reduction,
        Category::Transformation,
    ];

    /// One-letter tag used in the plan's table (`I`, `E`, `R`, `T`).
    pub fn tag(self) -> char {
        match self {
            Category::Identity => 'I',
            Category::Expansion => 'E',
            Category::Reduction => 'R',
            Category::Transformation => 'T',
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Category::Identity => "Identity",
            Category::Expansion => "Expansion",
            Category::Reduction => "Reduction",
            Category::Transformation => "Transformation",
        })
    }
}

/// BLB Table 4 as data: `TABLE4[first][second]` is the category of the fused pair, `None`
/// where the table has ✗ (a pattern that does not occur in Transformers and is not fused).
/// Indexing follows [`Category::ALL`].
pub const TABLE4: [[Option<Category>; 4]; 4] = {
    use Category::*;
    [
        // first = Identity: fuses with anything and takes the second's type.
        [
            Some(Identity),
            Some(Expansion),
            Some(Reduction),
            Some(Transformation),
        ],
        // first = Expansion.
        [Some(Expansion), None, Some(Identity), Some(Expansion)],
        // first = Reduction.
        [Some(Reduction), Some(Identity), None, None],
        // first = Transformation.
        [
            Some(Transformation),
            None,
            Some(Reduction),
            Some(Transformation),
        ],
    ]
};

fn index(c: Category) -> usize {
    match c {
        Category::Identity => 0,
        Category::Expansion => 1,
        Category::Reduction => 2,
        Category::Transformation => 3,
    }
}

/// The fused category of `first` followed by `second` (BLB Table 4), `None` if they cannot
/// be fused.
pub fn fuse(first: Category, second: Category) -> Option<Category> {
    TABLE4[index(first)][index(second)]
}

/// Linear operators (BLB Table 2), evaluated under CKKS when fused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinearKind {
    EwaddCc,
    EwaddCp,
    EwmulCc,
    EwmulCp,
    /// Scalar addition, ct-ct: a `(L, D)` ciphertext plus a broadcast `(L, 1)` ciphertext.
    SaddCc,
    /// Scalar addition with a plaintext operand; the ciphertext is the `(L, 1)` scalar (a
    /// plaintext scalar is repacked for free and becomes `ewadd_cp`, BLB App. B).
    SaddCp,
    SmulCc,
    /// Scalar multiplication with a plaintext operand; as [`LinearKind::SaddCp`].
    SmulCp,
    /// Sum over the reduce dimension.
    Sum,
    MatmulCc,
    MatmulCp,
}

impl LinearKind {
    /// Every linear kind, in Table 2's order.
    pub const ALL: [LinearKind; 11] = [
        LinearKind::EwaddCc,
        LinearKind::EwaddCp,
        LinearKind::EwmulCc,
        LinearKind::EwmulCp,
        LinearKind::SaddCc,
        LinearKind::SaddCp,
        LinearKind::SmulCc,
        LinearKind::SmulCp,
        LinearKind::Sum,
        LinearKind::MatmulCc,
        LinearKind::MatmulCp,
    ];

    /// The category of BLB Table 2.
    pub fn category(self) -> Category {
        use LinearKind::*;
        match self {
            EwaddCc | EwaddCp | EwmulCc | EwmulCp => Category::Identity,
            SaddCc | SaddCp | SmulCc | SmulCp => Category::Expansion,
            Sum => Category::Reduction,
            MatmulCc | MatmulCp => Category::Transformation,
        }
    }

    /// The paper's name (`ewadd_cc`, `matmul_cp`...).
    pub fn name(self) -> &'static str {
        use LinearKind::*;
        match self {
            EwaddCc => "ewadd_cc",
            EwaddCp => "ewadd_cp",
            EwmulCc => "ewmul_cc",
            EwmulCp => "ewmul_cp",
            SaddCc => "sadd_cc",
            SaddCp => "sadd_cp",
            SmulCc => "smul_cc",
            SmulCp => "smul_cp",
            Sum => "sum",
            MatmulCc => "matmul_cc",
            MatmulCp => "matmul_cp",
        }
    }

    /// Additions only: on additive shares these are local to each party (no message, no
    /// truncation), so the planner never converts a tensor to CKKS just for them.
    pub fn is_additive(self) -> bool {
        use LinearKind::*;
        matches!(self, EwaddCc | EwaddCp | SaddCc | SaddCp | Sum)
    }

    /// `(ct-ct, ct-pt)` multiplications on the longest path through one call (each followed
    /// by a rescale, so their sum is the levels consumed), as used for the block depth.
    /// `matmul_cc` is BLB §5.1's protocol: step-1 masks, step-2 products, step-3 masks and the
    /// BSGS giant-step masks (App. C.1) give depth 4; with `b_from_mpc` the step-1 pre-rotation
    /// is a local repacking of the shares (§5.2, `V_h`), so it costs no level.
    pub fn mults(self, b_from_mpc: bool) -> (u32, u32) {
        use LinearKind::*;
        match self {
            EwmulCc | SmulCc => (1, 0),
            EwmulCp | SmulCp | MatmulCp => (0, 1),
            MatmulCc if b_from_mpc => (1, 2),
            MatmulCc => (1, 3),
            EwaddCc | EwaddCp | SaddCc | SaddCp | Sum => (0, 0),
        }
    }

    /// The category an operator has as seen from operand `i` (the edge used for Table 4):
    /// a scalar operator is an Expansion of its `(L, 1)` operand (`i == 1` for `*_cc`, the
    /// only ciphertext for `*_cp`) but element-wise (Identity) on its `(L, D)` operand.
    pub fn operand_category(self, i: usize) -> Category {
        match self {
            LinearKind::SaddCc | LinearKind::SmulCc if i == 0 => Category::Identity,
            k => k.category(),
        }
    }
}

/// Nonlinear operators (BLB Table 2, plus the row max of softmax, L comparisons in a tree),
/// evaluated by MPC protocols.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NonlinearKind {
    Cmp,
    Mux,
    Max,
    Rec,
    Rsqrt,
}

impl NonlinearKind {
    pub fn name(self) -> &'static str {
        match self {
            NonlinearKind::Cmp => "cmp",
            NonlinearKind::Mux => "mux",
            NonlinearKind::Max => "max",
            NonlinearKind::Rec => "rec",
            NonlinearKind::Rsqrt => "rsqrt",
        }
    }
}

/// A linear or nonlinear operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Linear(LinearKind),
    Nonlinear(NonlinearKind),
}

impl OpKind {
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Linear(k) => k.name(),
            OpKind::Nonlinear(k) => k.name(),
        }
    }
}

/// BLB Table 6 (AGREEMENT: both parties use the same set per block) — the `he` crate's CKKS
/// presets, one table for the planner and the evaluator.
pub use nectar_he::ckks::{BlbPreset as CkksPreset, BLB_TABLE6};

/// The deepest block any Table 6 set supports.
pub fn max_preset_depth() -> u32 {
    BLB_TABLE6.iter().map(|p| p.depth).max().unwrap_or(0)
}

/// The smallest Table 6 set covering `depth`: the tightest depth, then the fewest modulus
/// bits. (BLB picked among its depth-7 sets by EVA's MSE bound, i.e. by scale, which this
/// planner does not model; REFERENCE §5.1.)
pub fn choose_preset(depth: u32) -> Option<&'static CkksPreset> {
    BLB_TABLE6
        .iter()
        .filter(|p| p.depth >= depth)
        .min_by_key(|p| (p.depth, p.total_bits()))
}
