//! BLB's fused CKKS matmuls (BLB §4.2, §5, App. C.1–C.2; REFERENCE.md §5.2), written once
//! against [`SlotOps`] and run either on real ciphertexts ([`CkksOps`]) or on a plaintext slot
//! simulator ([`SlotSim`]) that applies the same operations to `Vec<f64>` and counts them the
//! way [`nectar_he::ckks::EvalStats`] does — so rotation and ct-ct counts at the paper's shapes
//! come without HE, and equal the real counts by construction (tested).
//!
//! - [`matmul_cc`]: rotation-efficient ct-ct `C_h = A_h·B_h` (§5.1): step 1 pre-rotates the rows
//!   of `B` (inner rotations: masks + two rotations + ct-pt, hoisted to `c` rotations per
//!   ciphertext), step 2 inner-rotates `B` by every `t < L` and multiplies with `A` (partial
//!   sums of every diagonal), step 3 aligns, masks and sums. Multi-head packing ([`MhLayout`]);
//!   BSGS with `t = u + ρ·r`: babies `u < ρ` rotate `B`, giants `r < c` pre-rotate `A`, and the
//!   giant rotation back is fused into step 3's alignment (App. C.1, Fig. 14). Rotations
//!   `J·c + 2J(c − 1) + 2J(ρ − 1) + L`, ct-ct products `J·L` (`J = ⌈d/c⌉`, `ρ = L/c`); depth 4
//!   (three ct-pt masks and the product). Output in [`Packing::MhDiagonal`].
//! - [`block_matvec`]: ct × pt by the diagonal method over blocks of `L` slots with BSGS —
//!   BOLT's spatial-first `X·W` ([`matmul_cp_spatial`]) and BLB's diagonal-input variant
//!   ([`matmul_cp_diag`], App. C.2, Fig. 15: the weight in a duplicated spatial-first layout).
//!   Rotations `n_in(B − 1) + n_out(G − 1)`, `B·G = s/L`.
//! - [`sum_reduce`], [`broadcast`], [`sum_broadcast`]: the reduce-dimension sum and broadcast in
//!   spatial-first packing by `log2 D` rotate-and-adds with strides `2^{i−1}·L` (§4.2.1, Fig. 6,
//!   Table 3).
//! - [`plan_counts`] (simulated, any shape) and [`run_ckks`] (real CKKS, timed) for the bench.
//!
//! Scales: masks and weights are encoded at the scale of the prime the next rescale divides
//! by, so every rescale restores the operand's scale and all summands agree.

use crate::ckks_packing::{Mat, MhLayout, Packing};
use crate::LinearError;
use nectar_he::ckks::CkksCiphertext;
use nectar_he::ckks::{CkksEvaluator, CkksParams, CkksPlaintext, CkksSecretKey, EvalCounts};
use nectar_math::Prg;
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// The counters behind a lock (a panic elsewhere cannot leave them inconsistent: they are only
/// added to).
fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The slot-level operations the algorithms use; implemented by real CKKS and by the simulator.
/// Shared across threads: [`block_matvec`] computes its output ciphertexts in parallel.
pub trait SlotOps: Sync {
    /// A ciphertext.
    type Ct: Clone + Send + Sync;
    /// An encoded plaintext.
    type Pt;
    /// Slots per ciphertext `s`.
    fn slots(&self) -> usize;
    /// Level (data primes) of a ciphertext.
    fn level(&self, ct: &Self::Ct) -> usize;
    /// Encodes `values` (length `s`) at `level`, at the scale of the prime a rescale at
    /// `level` divides by.
    fn encode(&self, values: &[f64], level: usize) -> Result<Self::Pt, LinearError>;
    /// Left rotation by `k` slots (`k ≡ 0 mod s` is a free copy).
    fn rotate(&self, ct: &Self::Ct, k: i64) -> Result<Self::Ct, LinearError>;
    /// `a + b` (at the lower level).
    fn add(&self, a: &Self::Ct, b: &Self::Ct) -> Result<Self::Ct, LinearError>;
    /// `a ⊙ p` (one ct-pt product).
    fn mul_plain(&self, a: &Self::Ct, p: &Self::Pt) -> Result<Self::Ct, LinearError>;
    /// `a ⊙ b`, not relinearised (one ct-ct product).
    fn mul(&self, a: &Self::Ct, b: &Self::Ct) -> Result<Self::Ct, LinearError>;
    /// Relinearisation (one key switch).
    fn relin(&self, a: &Self::Ct) -> Result<Self::Ct, LinearError>;
    /// Rescale by the last prime.
    fn rescale(&self, a: &Self::Ct) -> Result<Self::Ct, LinearError>;
    /// Drops to `level` (free).
    fn mod_drop(&self, a: &Self::Ct, level: usize) -> Result<Self::Ct, LinearError>;
    /// Operation counts so far.
    fn counts(&self) -> EvalCounts;
    /// `a − b` (at the lower level).
    fn sub(&self, a: &Self::Ct, b: &Self::Ct) -> Result<Self::Ct, LinearError>;
    /// `a + values` slot-wise, the values encoded at `a`'s level and scale (no level used).
    fn add_values(&self, a: &Self::Ct, values: &[f64]) -> Result<Self::Ct, LinearError>;
    /// `a ⊙ values` rescaled, landing exactly on the scale `target`: the plaintext is encoded
    /// at `target·q_last/Δ_a` (`q_last` the prime the rescale divides by), so values computed
    /// along different paths can be added (fused blocks, [`SlotOps::scale`]). One ct-pt
    /// product, one rescale.
    fn mul_values_to(&self, a: &Self::Ct, values: &[f64], target: f64) -> Result<Self::Ct, LinearError>;
    /// The parameters' default scale `Δ` (the target of [`SlotOps::mul_values_to`]).
    fn scale(&self) -> f64;
    /// The scale of `a` (`Δ` for the simulator, which has none).
    fn scale_of(&self, a: &Self::Ct) -> f64;
    /// `a` with its scale read as `scale` (the encrypted integers unchanged): the values are
    /// multiplied by `scale_of(a)/scale`. Used after a product whose plaintext was multiplied
    /// by that ratio, so that it lands on `scale` exactly.
    fn relabel(&self, a: &Self::Ct, scale: f64) -> Result<Self::Ct, LinearError>;
}

// ---------------------------------------------------------------------------------------------
// Real CKKS

/// [`SlotOps`] on a [`CkksEvaluator`] (counts are its [`nectar_he::ckks::EvalStats`]); also
/// accumulates the seconds spent encoding plaintexts (masks, weights).
pub struct CkksOps<'a> {
    eval: &'a CkksEvaluator,
    encode_secs: Mutex<f64>,
}

impl<'a> CkksOps<'a> {
    /// Wraps an evaluator holding the relinearisation key and the needed Galois keys.
    pub fn new(eval: &'a CkksEvaluator) -> Self {
        Self {
            eval,
            encode_secs: Mutex::new(0.0),
        }
    }
    /// Seconds spent in [`SlotOps::encode`].
    pub fn encode_seconds(&self) -> f64 {
        *locked(&self.encode_secs)
    }
}

impl SlotOps for CkksOps<'_> {
    type Ct = CkksCiphertext;
    type Pt = CkksPlaintext;
    fn slots(&self) -> usize {
        self.eval.params().slots()
    }
    fn level(&self, ct: &CkksCiphertext) -> usize {
        ct.level()
    }
    fn encode(&self, values: &[f64], level: usize) -> Result<CkksPlaintext, LinearError> {
        let t = Instant::now();
        let p = self.eval.params();
        let scale = match level {
            1 => p.default_scale(),
            l => p.last_prime(l).map_or(p.default_scale(), |q| q as f64),
        };
        let pt = p.encode_real(values, level, scale)?;
        *locked(&self.encode_secs) += t.elapsed().as_secs_f64();
        Ok(pt)
    }
    fn rotate(&self, ct: &CkksCiphertext, k: i64) -> Result<CkksCiphertext, LinearError> {
        Ok(self.eval.rotate(ct, k)?)
    }
    fn add(&self, a: &CkksCiphertext, b: &CkksCiphertext) -> Result<CkksCiphertext, LinearError> {
        Ok(self.eval.add(a, b)?)
    }
    fn mul_plain(
        &self,
        a: &CkksCiphertext,
        p: &CkksPlaintext,
    ) -> Result<CkksCiphertext, LinearError> {
        Ok(self.eval.mul_plain(a, p)?)
    }
    fn mul(&self, a: &CkksCiphertext, b: &CkksCiphertext) -> Result<CkksCiphertext, LinearError> {
        Ok(self.eval.mul(a, b)?)
    }
    fn relin(&self, a: &CkksCiphertext) -> Result<CkksCiphertext, LinearError> {
        Ok(self.eval.relinearize(a)?)
    }
    fn rescale(&self, a: &CkksCiphertext) -> Result<CkksCiphertext, LinearError> {
        Ok(self.eval.rescale(a)?)
    }
    fn mod_drop(&self, a: &CkksCiphertext, level: usize) -> Result<CkksCiphertext, LinearError> {
        Ok(self.eval.mod_drop_to(a, level)?)
    }
    fn counts(&self) -> EvalCounts {
        self.eval.stats().snapshot()
    }
    fn sub(&self, a: &CkksCiphertext, b: &CkksCiphertext) -> Result<CkksCiphertext, LinearError> {
        Ok(self.eval.sub(a, b)?)
    }
    fn add_values(&self, a: &CkksCiphertext, values: &[f64]) -> Result<CkksCiphertext, LinearError> {
        let t = Instant::now();
        let pt = self.eval.params().encode_real(values, a.level(), a.scale())?;
        *locked(&self.encode_secs) += t.elapsed().as_secs_f64();
        Ok(self.eval.add_plain(a, &pt)?)
    }
    fn mul_values_to(&self, a: &CkksCiphertext, values: &[f64], target: f64) -> Result<CkksCiphertext, LinearError> {
        let t = Instant::now();
        let p = self.eval.params();
        let q = p
            .last_prime(a.level())
            .ok_or_else(|| LinearError::BadParams(format!("no rescale below level {}", a.level())))?;
        let pt = p.encode_real(values, a.level(), target * q as f64 / a.scale())?;
        *locked(&self.encode_secs) += t.elapsed().as_secs_f64();
        let mut out = self.eval.rescale(&self.eval.mul_plain(a, &pt)?)?;
        // The rescale divides by q exactly: Δ_a·(target·q/Δ_a)/q = target up to f64 rounding.
        out.set_scale(target)?;
        Ok(out)
    }
    fn scale(&self) -> f64 {
        self.eval.params().default_scale()
    }
    fn scale_of(&self, a: &CkksCiphertext) -> f64 {
        a.scale()
    }
    fn relabel(&self, a: &CkksCiphertext, scale: f64) -> Result<CkksCiphertext, LinearError> {
        let mut c = a.clone();
        c.set_scale(scale)?;
        Ok(c)
    }
}

// ---------------------------------------------------------------------------------------------
// Simulator

/// A simulated ciphertext: its slot values, level and degree (3 components before relin).
#[derive(Clone, Debug, PartialEq)]
pub struct SimCt {
    /// Slot values.
    pub v: Vec<f64>,
    /// Level (data primes).
    pub level: usize,
    /// True between a ct-ct product and its relinearisation.
    pub deg2: bool,
}

/// Plaintext slot simulator: the same operations on `Vec<f64>`, counted as the evaluator
/// counts them, and the set of rotation steps used (to generate exactly those Galois keys).
#[derive(Debug)]
pub struct SlotSim {
    slots: usize,
    counts: Mutex<EvalCounts>,
    /// Rotation steps used, each with the highest level it was used at.
    steps: Mutex<BTreeMap<i64, usize>>,
}

impl SlotSim {
    /// A simulator with `slots` slots.
    pub fn new(slots: usize) -> Self {
        Self {
            slots,
            counts: Mutex::new(EvalCounts::default()),
            steps: Mutex::new(BTreeMap::new()),
        }
    }
    /// A fresh simulated ciphertext at `level`.
    pub fn encrypt(&self, v: Vec<f64>, level: usize) -> SimCt {
        SimCt {
            v,
            level,
            deg2: false,
        }
    }
    /// Rotation steps used (reduced to `(−s/2, s/2]`).
    pub fn rotation_steps(&self) -> Vec<i64> {
        locked(&self.steps).keys().copied().collect()
    }
    /// Rotation steps used, each with the highest level it was used at (the level its Galois
    /// key must serve).
    pub fn rotation_levels(&self) -> Vec<(i64, usize)> {
        locked(&self.steps).iter().map(|(&k, &l)| (k, l)).collect()
    }
    fn bump(&self, f: impl FnOnce(&mut EvalCounts)) {
        f(&mut locked(&self.counts));
    }
    fn check(&self, a: &SimCt) -> Result<(), LinearError> {
        if a.v.len() != self.slots || a.level == 0 {
            return Err(LinearError::BadShape(format!(
                "simulated ciphertext of {} slots at level {}",
                a.v.len(),
                a.level
            )));
        }
        Ok(())
    }
}

impl SlotOps for SlotSim {
    type Ct = SimCt;
    type Pt = (Vec<f64>, usize);
    fn slots(&self) -> usize {
        self.slots
    }
    fn level(&self, ct: &SimCt) -> usize {
        ct.level
    }
    fn encode(&self, values: &[f64], level: usize) -> Result<(Vec<f64>, usize), LinearError> {
        if values.len() > self.slots || level == 0 {
            return Err(LinearError::BadShape(format!(
                "{} values at level {level}",
                values.len()
            )));
        }
        let mut v = values.to_vec();
        v.resize(self.slots, 0.0);
        Ok((v, level))
    }
    fn rotate(&self, ct: &SimCt, k: i64) -> Result<SimCt, LinearError> {
        self.check(ct)?;
        if ct.deg2 {
            return Err(LinearError::BadShape(
                "rotation of an unrelinearised ciphertext".into(),
            ));
        }
        let s = self.slots as i64;
        let k = k.rem_euclid(s);
        if k == 0 {
            return Ok(ct.clone());
        }
        let mut steps = locked(&self.steps);
        let top = steps.entry(if k > s / 2 { k - s } else { k }).or_insert(ct.level);
        *top = (*top).max(ct.level);
        drop(steps);
        self.bump(|c| {
            c.rotations += 1;
            c.key_switches += 1;
        });
        Ok(SimCt {
            v: rot_vec(&ct.v, k),
            level: ct.level,
            deg2: false,
        })
    }
    fn add(&self, a: &SimCt, b: &SimCt) -> Result<SimCt, LinearError> {
        self.check(a)?;
        self.check(b)?;
        Ok(SimCt {
            v: a.v.iter().zip(&b.v).map(|(x, y)| x + y).collect(),
            level: a.level.min(b.level),
            deg2: a.deg2 || b.deg2,
        })
    }
    fn mul_plain(&self, a: &SimCt, p: &(Vec<f64>, usize)) -> Result<SimCt, LinearError> {
        self.check(a)?;
        self.bump(|c| c.ct_pt_mults += 1);
        Ok(SimCt {
            v: a.v.iter().zip(&p.0).map(|(x, y)| x * y).collect(),
            level: a.level.min(p.1),
            deg2: a.deg2,
        })
    }
    fn mul(&self, a: &SimCt, b: &SimCt) -> Result<SimCt, LinearError> {
        self.check(a)?;
        self.check(b)?;
        if a.deg2 || b.deg2 {
            return Err(LinearError::BadShape(
                "ct-ct product of an unrelinearised ciphertext".into(),
            ));
        }
        self.bump(|c| c.ct_ct_mults += 1);
        Ok(SimCt {
            v: a.v.iter().zip(&b.v).map(|(x, y)| x * y).collect(),
            level: a.level.min(b.level),
            deg2: true,
        })
    }
    fn relin(&self, a: &SimCt) -> Result<SimCt, LinearError> {
        if !a.deg2 {
            return Ok(a.clone());
        }
        self.bump(|c| c.key_switches += 1);
        Ok(SimCt {
            deg2: false,
            ..a.clone()
        })
    }
    fn rescale(&self, a: &SimCt) -> Result<SimCt, LinearError> {
        if a.level <= 1 {
            return Err(LinearError::BadParams(
                "cannot rescale below the base prime".into(),
            ));
        }
        self.bump(|c| c.rescales += 1);
        Ok(SimCt {
            level: a.level - 1,
            ..a.clone()
        })
    }
    fn mod_drop(&self, a: &SimCt, level: usize) -> Result<SimCt, LinearError> {
        if level == 0 || level > a.level {
            return Err(LinearError::BadParams(format!(
                "mod drop to level {level} from {}",
                a.level
            )));
        }
        Ok(SimCt { level, ..a.clone() })
    }
    fn counts(&self) -> EvalCounts {
        *locked(&self.counts)
    }
    fn sub(&self, a: &SimCt, b: &SimCt) -> Result<SimCt, LinearError> {
        self.check(a)?;
        self.check(b)?;
        Ok(SimCt {
            v: a.v.iter().zip(&b.v).map(|(x, y)| x - y).collect(),
            level: a.level.min(b.level),
            deg2: a.deg2 || b.deg2,
        })
    }
    fn add_values(&self, a: &SimCt, values: &[f64]) -> Result<SimCt, LinearError> {
        let (p, _) = self.encode(values, a.level)?;
        Ok(SimCt { v: a.v.iter().zip(&p).map(|(x, y)| x + y).collect(), ..a.clone() })
    }
    fn mul_values_to(&self, a: &SimCt, values: &[f64], _target: f64) -> Result<SimCt, LinearError> {
        let p = self.encode(values, a.level)?;
        self.rescale(&self.mul_plain(a, &p)?)
    }
    fn scale(&self) -> f64 {
        1.0
    }
    fn scale_of(&self, _a: &SimCt) -> f64 {
        1.0
    }
    fn relabel(&self, a: &SimCt, _scale: f64) -> Result<SimCt, LinearError> {
        Ok(a.clone())
    }
}

/// `Rot_k(v)[j] = v[(j + k) mod s]` (left rotation, as the evaluator's).
pub fn rot_vec(v: &[f64], k: i64) -> Vec<f64> {
    let s = v.len();
    if s == 0 {
        return Vec::new();
    }
    let k = k.rem_euclid(s as i64) as usize;
    (0..s).map(|j| v[(j + k) % s]).collect()
}

// ---------------------------------------------------------------------------------------------
// Helpers

/// Plaintext masks encoded once per (key, level).
struct Masks<'o, O: SlotOps> {
    ops: &'o O,
    cache: HashMap<(u64, usize), O::Pt>,
}

impl<'o, O: SlotOps> Masks<'o, O> {
    fn new(ops: &'o O) -> Self {
        Self {
            ops,
            cache: HashMap::new(),
        }
    }
    fn get(
        &mut self,
        key: u64,
        level: usize,
        f: impl Fn(usize) -> f64,
    ) -> Result<&O::Pt, LinearError> {
        if !self.cache.contains_key(&(key, level)) {
            let v: Vec<f64> = (0..self.ops.slots()).map(f).collect();
            let pt = self.ops.encode(&v, level)?;
            self.cache.insert((key, level), pt);
        }
        self.cache
            .get(&(key, level))
            .ok_or_else(|| LinearError::BadParams("mask cache".into()))
    }
}

fn acc_add<O: SlotOps>(ops: &O, acc: &mut Option<O::Ct>, x: O::Ct) -> Result<(), LinearError> {
    *acc = Some(match acc.take() {
        None => x,
        Some(a) => ops.add(&a, &x)?,
    });
    Ok(())
}

const MASK_LO: u64 = 1 << 40;
const MASK_HI: u64 = 2 << 40;

/// Inner rotation (§5.1): every block of `l` slots rotated left by `a` (`0 < a < l`):
/// `M_lo ⊙ Rot_a(x) + M_hi ⊙ Rot_{a−l}(x)`, rescaled. Two rotations, two ct-pt products.
fn inner_rotate<O: SlotOps>(
    ops: &O,
    masks: &mut Masks<'_, O>,
    x: &O::Ct,
    l: usize,
    a: usize,
) -> Result<O::Ct, LinearError> {
    let lvl = ops.level(x);
    let y1 = ops.rotate(x, a as i64)?;
    let y2 = ops.rotate(x, a as i64 - l as i64)?;
    let p1 = ops.mul_plain(
        &y1,
        masks.get(MASK_LO | a as u64, lvl, |j| ((j % l) < l - a) as u8 as f64)?,
    )?;
    let p2 = ops.mul_plain(
        &y2,
        masks.get(MASK_HI | a as u64, lvl, |j| ((j % l) >= l - a) as u8 as f64)?,
    )?;
    ops.rescale(&ops.add(&p1, &p2)?)
}

// ---------------------------------------------------------------------------------------------
// ct-ct matmul (§5.1, App. C.1)

/// The operand count `J` of a ct-ct matmul on `lay`, checked against both operands.
fn check_cc_operands<O: SlotOps>(ops: &O, lay: &MhLayout, a: &[O::Ct], b: &[O::Ct]) -> Result<usize, LinearError> {
    let j_cts = lay.operand_cts();
    if a.len() != j_cts || b.len() != j_cts || lay.slots != ops.slots() {
        return Err(LinearError::BadShape(format!(
            "ct-ct matmul: {} x {} ciphertexts, layout needs {j_cts}",
            a.len(),
            b.len()
        )));
    }
    Ok(j_cts)
}

/// `C_h = A_h·B_h` for every head (BLB §5.1, Fig. 7, Fig. 14). `a`: `A_h` (`L × d`) in
/// [`Packing::MhSpatialFirst`]; `b`: `B_h` (`d × L`) in [`Packing::MhReduceFirst`], both on
/// `lay` (`lay.reduce = d`; for `softmax·V_h` pass `V_h` zero-padded to `L × L`, §5.2).
/// Returns `C_h` (`L × L`) in [`Packing::MhDiagonal`], 4 levels below the inputs.
///
/// With `ρ = L/c`, block `(h, g)` of `B_j` is pre-rotated by `ρ·g` (step 1), so that the
/// product of `A_j` with `B_j` inner-rotated by `t` holds, in group `g`, partial sums of
/// diagonal `t + ρg` — exactly group `g + r` of output ciphertext `u` for `t = u + ρr`.
pub fn matmul_cc<O: SlotOps>(
    ops: &O,
    lay: &MhLayout,
    a: &[O::Ct],
    b: &[O::Ct],
) -> Result<Vec<O::Ct>, LinearError> {
    let j_cts = check_cc_operands(ops, lay, a, b)?;
    let (l, c, rho) = (lay.l, lay.c, lay.rho());
    let mut masks = Masks::new(ops);

    // Step 1: B'_j = Σ_g G_g ⊙ InnerRot_{ρg}(B_j), hoisted: one rotation per group plus one
    // shared Rot_{−L} for the wrapped parts (c rotations per ciphertext).
    let mut b1 = Vec::with_capacity(j_cts);
    for bj in b {
        if c == 1 {
            b1.push(bj.clone());
            continue;
        }
        let lvl = ops.level(bj);
        let mut lo = Some(ops.mul_plain(
            bj,
            masks.get(3 << 40, lvl, |p| (lay.group_of(p) == 0) as u8 as f64)?,
        )?);
        let mut hi: Option<O::Ct> = None;
        for g in 1..c {
            let amt = rho * g;
            let y = ops.rotate(bj, amt as i64)?;
            let m_lo = masks.get((4 << 40) | g as u64, lvl, |p| {
                (lay.group_of(p) == g && p % l < l - amt) as u8 as f64
            })?;
            acc_add(ops, &mut lo, ops.mul_plain(&y, m_lo)?)?;
            // Rot_L of the wrapped-part mask, so that Rot_{−L} applied after the sum puts it back.
            let s = lay.slots;
            let m_hi = masks.get((5 << 40) | g as u64, lvl, |p| {
                let q = (p + l) % s;
                (lay.group_of(q) == g && q % l >= l - amt) as u8 as f64
            })?;
            acc_add(ops, &mut hi, ops.mul_plain(&y, m_hi)?)?;
        }
        let mut sum = lo.ok_or_else(|| LinearError::BadShape("empty step 1".into()))?;
        if let Some(h) = hi {
            sum = ops.add(&sum, &ops.rotate(&h, -(l as i64))?)?;
        }
        b1.push(ops.rescale(&sum)?);
    }
    matmul_cc_prerotated(ops, lay, a, &b1)
}

/// [`matmul_cc`] from step 2, with `B` already pre-rotated as step 1 leaves it (block `(h, g)`
/// inner-rotated left by `ρ·g`; [`MhLayout::prerotated_slot`]): BLB §5.2 has the shares of an
/// operand coming from MPC repacked that way for free, saving step 1's level and rotations.
/// Returns `C_h` in [`Packing::MhDiagonal`], 3 levels below the inputs.
pub fn matmul_cc_prerotated<O: SlotOps>(
    ops: &O,
    lay: &MhLayout,
    a: &[O::Ct],
    b1: &[O::Ct],
) -> Result<Vec<O::Ct>, LinearError> {
    let j_cts = check_cc_operands(ops, lay, a, b1)?;
    let (l, c, rho) = (lay.l, lay.c, lay.rho());
    let group_stride = (l * lay.hs) as i64;
    let mut masks = Masks::new(ops);

    // Step 2, baby steps: B̃_{j,u} = InnerRot_u(B'_j), u < ρ.
    let mut babies: Vec<Vec<O::Ct>> = Vec::with_capacity(j_cts);
    for bj in b1 {
        let mut row = vec![bj.clone()];
        for u in 1..rho {
            row.push(inner_rotate(ops, &mut masks, bj, l, u)?);
        }
        babies.push(row);
    }
    // Giant steps on A: Ã_{j,r} = InnerRot_{−ρr}(A_j), r < c.
    let mut giants: Vec<Vec<O::Ct>> = Vec::with_capacity(j_cts);
    for aj in a {
        let mut row = vec![aj.clone()];
        for r in 1..c {
            row.push(inner_rotate(ops, &mut masks, aj, l, l - rho * r)?);
        }
        giants.push(row);
    }
    // All products at one level, so that every Z_{u,r} is rescaled by the same prime.
    let lvl = babies
        .iter()
        .flatten()
        .chain(giants.iter().flatten())
        .map(|x| ops.level(x))
        .min()
        .unwrap_or(1);
    for x in babies
        .iter_mut()
        .flatten()
        .chain(giants.iter_mut().flatten())
    {
        *x = ops.mod_drop(x, lvl)?;
    }

    // Z_{u,r} = Σ_j Ã_{j,r} ⊙ B̃_{j,u}; step 3 (giant rotation fused with the alignment):
    // out_u = Z_{u,0} + Σ_{r≥1} Rot_{−r·L·hs}(InnerRot_{ρr}(Z_{u,r})), hoisted to c rotations.
    let mut out = Vec::with_capacity(rho);
    for u in 0..rho {
        let mut base: Option<O::Ct> = None;
        let (mut lo, mut hi): (Option<O::Ct>, Option<O::Ct>) = (None, None);
        for r in 0..c {
            let mut z: Option<O::Ct> = None;
            for (ga, bb) in giants.iter().zip(&babies) {
                acc_add(ops, &mut z, ops.mul(&ga[r], &bb[u])?)?;
            }
            let z = z.ok_or_else(|| LinearError::BadShape("no operand ciphertexts".into()))?;
            let z = ops.rescale(&ops.relin(&z)?)?;
            if r == 0 {
                base = Some(z);
                continue;
            }
            let amt = rho * r;
            let y = ops.rotate(&z, amt as i64 - r as i64 * group_stride)?;
            let zl = ops.level(&z);
            // Block-periodic masks: invariant under the group rotation (a multiple of L).
            acc_add(
                ops,
                &mut lo,
                ops.mul_plain(
                    &y,
                    masks.get(MASK_LO | amt as u64, zl, |p| {
                        ((p % l) < l - amt) as u8 as f64
                    })?,
                )?,
            )?;
            acc_add(
                ops,
                &mut hi,
                ops.mul_plain(
                    &y,
                    masks.get(MASK_HI | amt as u64, zl, |p| {
                        ((p % l) >= l - amt) as u8 as f64
                    })?,
                )?,
            )?;
        }
        let mut o = base.ok_or_else(|| LinearError::BadShape("no output".into()))?;
        if let (Some(lo), Some(hi)) = (lo, hi) {
            let aligned = ops.rescale(&ops.add(&lo, &ops.rotate(&hi, -(l as i64))?)?)?;
            o = ops.add(&aligned, &o)?;
        }
        out.push(o);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// ct-pt matmuls (BOLT; BLB App. C.2)

/// `out_o = Σ_i Σ_β (weight block ⊙ input block)` over blocks of `l` slots: for output
/// ciphertext `o`, input ciphertext `i`, destination block `dst` and source block `src`,
/// `weight(o, i, dst, src)` is the `l`-vector multiplying source into destination (`None`:
/// zero). Diagonal method over the `nb = s/l` blocks with BSGS (App. C.1): babies
/// `Rot_{b·l}(x_i)`, `b < B`; giants `Rot_{g·B·l}` once per output ciphertext after summing
/// over inputs, each on its rescaled sum; rotations `n_in(B − 1) + n_out(G − 1)` (a giant with
/// no nonzero weight is not computed). One level.
pub fn block_matvec<O: SlotOps>(
    ops: &O,
    x: &[O::Ct],
    l: usize,
    n_out: usize,
    weight: &(dyn Fn(usize, usize, usize, usize) -> Option<Vec<f64>> + Sync),
) -> Result<Vec<O::Ct>, LinearError> {
    let s = ops.slots();
    if !l.is_power_of_two() || l > s || x.is_empty() {
        return Err(LinearError::BadShape(format!(
            "block matvec with blocks of {l} over {s} slots, {} inputs",
            x.len()
        )));
    }
    let nb = s / l;
    let baby = best_baby(x.len(), n_out, nb);
    let lvl = x.iter().map(|c| ops.level(c)).min().unwrap_or(1);
    let mut rots: Vec<Vec<O::Ct>> = Vec::with_capacity(x.len());
    for xi in x {
        let xi = ops.mod_drop(xi, lvl)?;
        let mut row = Vec::with_capacity(baby);
        for b in 0..baby {
            row.push(ops.rotate(&xi, (b * l) as i64)?);
        }
        rots.push(row);
    }
    // Output ciphertexts are independent: computed in parallel (rayon keeps their order).
    (0..n_out).into_par_iter().map(|o| {
        let mut acc: Option<O::Ct> = None;
        for g in 0..nb / baby {
            let mut inner: Option<O::Ct> = None;
            for (i, row) in rots.iter().enumerate() {
                for (b, xb) in row.iter().enumerate() {
                    // Diagonal k = gB + b, pre-rotated by −gBl: block `blk` of the product
                    // lands in destination block blk − gB; its source is block blk + b.
                    let mut v = vec![0.0; s];
                    let mut any = false;
                    for blk in 0..nb {
                        let dst = (blk + nb - (g * baby) % nb) % nb;
                        if let Some(w) = weight(o, i, dst, (blk + b) % nb) {
                            v[blk * l..(blk + 1) * l]
                                .iter_mut()
                                .zip(&w)
                                .for_each(|(d, &x)| *d = x);
                            any = true;
                        }
                    }
                    if any {
                        let pt = ops.encode(&v, lvl)?;
                        acc_add(ops, &mut inner, ops.mul_plain(xb, &pt)?)?;
                    }
                }
            }
            if let Some(inner) = inner {
                // Rescaled before the giant rotation (ours): the key switch runs one level
                // lower (cheaper, and its Galois key is cut there, `FusedCkks::keys`).
                acc_add(ops, &mut acc, ops.rotate(&ops.rescale(&inner)?, (g * baby * l) as i64)?)?;
            }
        }
        match acc {
            Some(a) => Ok(a),
            None => ops.rescale(&ops.mul_plain(&rots[0][0], &ops.encode(&vec![0.0; s], lvl)?)?),
        }
    })
    .collect()
}

/// The power-of-two baby count minimising `n_in(B − 1) + n_out(nb/B − 1)`.
fn best_baby(n_in: usize, n_out: usize, nb: usize) -> usize {
    let mut best = (usize::MAX, 1);
    let mut b = 1;
    while b <= nb {
        let cost = n_in * (b - 1) + n_out * (nb / b - 1);
        if cost < best.0 {
            best = (cost, b);
        }
        b *= 2;
    }
    best.1
}

/// BOLT's ct × pt `X·W` (BLB §5.2): `X` (`L × D`) in [`Packing::SpatialFirst`], `W` (`D × D'`)
/// in plaintext; output `X·W` (`L × D'`) in spatial-first packing. The weight block for
/// column `c_out ← c_in` is `W[c_in][c_out]` duplicated over the block.
pub fn matmul_cp_spatial<O: SlotOps>(
    ops: &O,
    x: &[O::Ct],
    l: usize,
    w: &Mat,
) -> Result<Vec<O::Ct>, LinearError> {
    let s = ops.slots();
    let p_in = Packing::SpatialFirst {
        rows: l,
        cols: w.rows,
        slots: s,
    };
    if x.len() != p_in.num_cts() || !l.is_power_of_two() || l > s {
        return Err(LinearError::BadShape(format!(
            "{} ciphertexts for X of {l} x {}",
            x.len(),
            w.rows
        )));
    }
    let nb = s / l;
    let n_out = Packing::SpatialFirst {
        rows: l,
        cols: w.cols,
        slots: s,
    }
    .num_cts();
    let weight = |o: usize, i: usize, dst: usize, src: usize| {
        let (ci, co) = (i * nb + src, o * nb + dst);
        (ci < w.rows && co < w.cols).then(|| vec![w.get(ci, co); l])
    };
    block_matvec(ops, x, l, n_out, &weight)
}

/// BLB's diagonal ct × pt (App. C.2, Fig. 15): `E = Concat_h(C_h)·W`, `C_h` (`L × L`, the
/// first `d` columns used, `d = W.rows / H`) in [`Packing::MhDiagonal`] on `lay`; output `E`
/// (`L × W.cols`) in spatial-first packing. Column `o` of `E` is `Σ_h Σ_δ diag_δ(C_h) ⊙ w`,
/// `w[i] = W[h·d + (i + δ) mod L][o]` (the duplicated spatial-first weight layout).
pub fn matmul_cp_diag<O: SlotOps>(
    ops: &O,
    lay: &MhLayout,
    c_diag: &[O::Ct],
    w: &Mat,
) -> Result<Vec<O::Ct>, LinearError> {
    let (l, rho) = (lay.l, lay.rho());
    if c_diag.len() != rho
        || !w.rows.is_multiple_of(lay.heads)
        || w.rows / lay.heads > l
        || lay.slots != ops.slots()
    {
        return Err(LinearError::BadShape(format!(
            "diagonal ct-pt: {} ciphertexts, W {}x{}",
            c_diag.len(),
            w.rows,
            w.cols
        )));
    }
    let d = w.rows / lay.heads;
    let nb = lay.blocks();
    let n_out = Packing::SpatialFirst {
        rows: l,
        cols: w.cols,
        slots: lay.slots,
    }
    .num_cts();
    let weight = |o: usize, u: usize, dst: usize, src: usize| {
        let (h, g) = (src % lay.hs, src / lay.hs);
        let co = o * nb + dst;
        if h >= lay.heads || co >= w.cols {
            return None;
        }
        let delta = u + rho * g;
        Some(
            (0..l)
                .map(|i| {
                    let j = (i + delta) % l;
                    if j < d {
                        w.get(h * d + j, co)
                    } else {
                        0.0
                    }
                })
                .collect(),
        )
    };
    block_matvec(ops, c_diag, l, n_out, &weight)
}

// ---------------------------------------------------------------------------------------------
// Sum / broadcast over the reduce dimension (§4.2.1, Fig. 6, Table 3)

/// Row sums of `X` (`L × D`, spatial-first over `x.len()` ciphertexts): the ciphertexts are
/// added, then `m ← m + Rot_{2^{i−1}·L}(m)` for `i = 1..log2(D_ct)` (`D_ct` = columns per
/// ciphertext). Block 0 holds `Σ_k X[:, k]`; if the blocks fill the ciphertext (`L·D >= s`)
/// every block does (the rotations are cyclic), which is the broadcast for free.
pub fn sum_reduce<O: SlotOps>(
    ops: &O,
    x: &[O::Ct],
    l: usize,
    d: usize,
) -> Result<O::Ct, LinearError> {
    let s = ops.slots();
    if x.is_empty()
        || !l.is_power_of_two()
        || !d.is_power_of_two()
        || x.len() != (l * d).div_ceil(s)
    {
        return Err(LinearError::BadShape(format!(
            "sum over D = {d} of L = {l} in {} ciphertexts",
            x.len()
        )));
    }
    let mut m = x[0].clone();
    for xi in &x[1..] {
        m = ops.add(&m, xi)?;
    }
    let blocks = (s / l).min(d);
    let mut stride = 1;
    while stride < blocks {
        m = ops.add(&m, &ops.rotate(&m, (stride * l) as i64)?)?;
        stride *= 2;
    }
    Ok(m)
}

/// Broadcasts block 0 of `m` to blocks `0..D` (`m ← m + Rot_{−2^{i−1}·L}(m)` after masking
/// block 0; Fig. 6). `log2 D` rotations, one ct-pt product, one rescale.
pub fn broadcast<O: SlotOps>(ops: &O, m: &O::Ct, l: usize, d: usize) -> Result<O::Ct, LinearError> {
    let s = ops.slots();
    if !l.is_power_of_two() || !d.is_power_of_two() || l * d > s {
        return Err(LinearError::BadShape(format!(
            "broadcast to D = {d} blocks of {l} in {s} slots"
        )));
    }
    let mask: Vec<f64> = (0..s).map(|p| (p < l) as u8 as f64).collect();
    let mut m = ops.rescale(&ops.mul_plain(m, &ops.encode(&mask, ops.level(m))?)?)?;
    let mut stride = 1;
    while stride < d {
        m = ops.add(&m, &ops.rotate(&m, -((stride * l) as i64))?)?;
        stride *= 2;
    }
    Ok(m)
}

/// Sum then broadcast (Table 3): when the blocks fill the ciphertext the sum is already in
/// every block (`log2 D` rotations, no product: "BLB w/ fusion"); otherwise mask and
/// broadcast (`2·log2 D` rotations, one product: "w/o fusion").
pub fn sum_broadcast<O: SlotOps>(
    ops: &O,
    x: &[O::Ct],
    l: usize,
    d: usize,
) -> Result<O::Ct, LinearError> {
    let m = sum_reduce(ops, x, l, d)?;
    if l * d >= ops.slots() {
        Ok(m)
    } else {
        broadcast(ops, &m, l, d)
    }
}

// ---------------------------------------------------------------------------------------------
// Plans at model shapes, real runs

/// A fused matmul of one transformer layer (BLB §5.2, Table 5 / Table 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlbOp {
    /// `Q_h·K_h^T` for all heads (ct-ct, [`matmul_cc`]).
    Qk,
    /// `softmax_h·V_h` for all heads (ct-ct, `V_h` padded to `L × L`).
    Sv,
    /// `Concat_h(Att_h)·W_O` from the diagonal-packed `Att_h` ([`matmul_cp_diag`]).
    AttnOut,
    /// `X·W_1` (`D → D_ff`, [`matmul_cp_spatial`]).
    Ffn1,
    /// `H·W_2` (`D_ff → D`).
    Ffn2,
}

/// Public model shape of one matmul call (AGREEMENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelShape {
    /// Tokens `L` (power of two).
    pub tokens: usize,
    /// Hidden size `D`.
    pub hidden: usize,
    /// Heads `H`.
    pub heads: usize,
    /// Feed-forward size `D_ff`.
    pub ffn: usize,
    /// CKKS slots `s = N/2`.
    pub slots: usize,
    /// Forced column groups per multi-head ciphertext (`None`: [`MhLayout::new`]'s default).
    pub mh_groups: Option<usize>,
}

impl ModelShape {
    /// BERT-large, 128 tokens, `s = 16384` (BLB Table 5 / Table 7).
    pub const BERT_LARGE: ModelShape = ModelShape {
        tokens: 128,
        hidden: 1024,
        heads: 16,
        ffn: 4096,
        slots: 16384,
        mh_groups: None,
    };
    /// GPT-2 base, 64 tokens, `s = 16384` (BLB Table 7).
    pub const GPT2_BASE: ModelShape = ModelShape {
        tokens: 64,
        hidden: 768,
        heads: 12,
        ffn: 3072,
        slots: 16384,
        mh_groups: None,
    };
    /// BERT-base, 128 tokens.
    pub const BERT_BASE: ModelShape = ModelShape {
        tokens: 128,
        hidden: 768,
        heads: 12,
        ffn: 3072,
        slots: 16384,
        mh_groups: None,
    };

    fn head_dim(&self) -> Result<usize, LinearError> {
        if self.heads == 0 || !self.hidden.is_multiple_of(self.heads) {
            return Err(LinearError::BadShape(format!(
                "hidden {} not divisible by {} heads",
                self.hidden, self.heads
            )));
        }
        Ok(self.hidden / self.heads)
    }
    /// The multi-head layout of `op`'s ct-ct operands (reduce `d` for `Qk`, `L` otherwise).
    pub fn layout(&self, op: BlbOp) -> Result<MhLayout, LinearError> {
        let reduce = if op == BlbOp::Qk {
            self.head_dim()?
        } else {
            self.tokens
        };
        MhLayout::new(self.tokens, self.heads, reduce, self.slots, self.mh_groups)
    }
}

/// Inputs of one op: slot vectors of the ciphertext operands and the plaintext weight.
struct OpInputs {
    a: Vec<Vec<f64>>,
    b: Vec<Vec<f64>>,
    w: Option<Mat>,
    expect: Vec<Mat>,
    out_packing: Packing,
}

fn rand_mat(prg: &mut Prg, rows: usize, cols: usize, scale: f64) -> Mat {
    Mat::from_fn(rows, cols, |_, _| {
        let u = (prg.next_u128() >> 75) as f64 / (1u64 << 53) as f64;
        (2.0 * u - 1.0) * scale
    })
}

fn op_inputs(op: BlbOp, sh: &ModelShape, prg: &mut Prg) -> Result<OpInputs, LinearError> {
    let (l, s) = (sh.tokens, sh.slots);
    let d = sh.head_dim()?;
    match op {
        BlbOp::Qk | BlbOp::Sv => {
            let lay = sh.layout(op)?;
            let (a, b): (Vec<Mat>, Vec<Mat>) = if op == BlbOp::Qk {
                let q: Vec<Mat> = (0..sh.heads).map(|_| rand_mat(prg, l, d, 1.0)).collect();
                let kt: Vec<Mat> = (0..sh.heads).map(|_| rand_mat(prg, d, l, 1.0)).collect();
                (q, kt)
            } else {
                let p: Vec<Mat> = (0..sh.heads)
                    .map(|_| rand_mat(prg, l, l, 1.0 / l as f64))
                    .collect();
                let v: Vec<Mat> = (0..sh.heads)
                    .map(|_| {
                        let v = rand_mat(prg, l, d.min(l), 1.0);
                        Mat::from_fn(l, l, |r, c| if c < v.cols { v.get(r, c) } else { 0.0 })
                    })
                    .collect();
                (p, v)
            };
            let expect = a
                .iter()
                .zip(&b)
                .map(|(x, y)| x.matmul(y))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(OpInputs {
                a: Packing::MhSpatialFirst(lay).pack(&a)?,
                b: Packing::MhReduceFirst(lay).pack(&b)?,
                w: None,
                expect,
                out_packing: Packing::MhDiagonal(lay),
            })
        }
        BlbOp::AttnOut => {
            let lay = sh.layout(op)?;
            if d > l {
                return Err(LinearError::BadShape(format!("head dim {d} > L = {l}")));
            }
            let att: Vec<Mat> = (0..sh.heads)
                .map(|_| {
                    let m = rand_mat(prg, l, d, 1.0);
                    Mat::from_fn(l, l, |r, c| if c < d { m.get(r, c) } else { 0.0 })
                })
                .collect();
            let w = rand_mat(prg, sh.hidden, sh.hidden, 1.0 / (sh.hidden as f64).sqrt());
            let concat = Mat::from_fn(l, sh.hidden, |r, c| att[c / d].get(r, c % d));
            Ok(OpInputs {
                a: Packing::MhDiagonal(lay).pack(&att)?,
                b: Vec::new(),
                expect: vec![concat.matmul(&w)?],
                w: Some(w),
                out_packing: Packing::SpatialFirst {
                    rows: l,
                    cols: sh.hidden,
                    slots: s,
                },
            })
        }
        BlbOp::Ffn1 | BlbOp::Ffn2 => {
            let (din, dout) = if op == BlbOp::Ffn1 {
                (sh.hidden, sh.ffn)
            } else {
                (sh.ffn, sh.hidden)
            };
            let x = rand_mat(prg, l, din, 1.0);
            let w = rand_mat(prg, din, dout, 1.0 / (din as f64).sqrt());
            Ok(OpInputs {
                a: Packing::SpatialFirst {
                    rows: l,
                    cols: din,
                    slots: s,
                }
                .pack(std::slice::from_ref(&x))?,
                b: Vec::new(),
                expect: vec![x.matmul(&w)?],
                w: Some(w),
                out_packing: Packing::SpatialFirst {
                    rows: l,
                    cols: dout,
                    slots: s,
                },
            })
        }
    }
}

fn run_op<O: SlotOps>(
    ops: &O,
    op: BlbOp,
    sh: &ModelShape,
    a: &[O::Ct],
    b: &[O::Ct],
    w: Option<&Mat>,
) -> Result<Vec<O::Ct>, LinearError> {
    let need_w = || w.ok_or_else(|| LinearError::BadParams("weight missing".into()));
    match op {
        BlbOp::Qk | BlbOp::Sv => matmul_cc(ops, &sh.layout(op)?, a, b),
        BlbOp::AttnOut => matmul_cp_diag(ops, &sh.layout(op)?, a, need_w()?),
        BlbOp::Ffn1 | BlbOp::Ffn2 => matmul_cp_spatial(ops, a, sh.tokens, need_w()?),
    }
}

/// Counts of one op at a shape (simulated) and the check of its simulated values.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanReport {
    /// Operation counts (as [`nectar_he::ckks::EvalStats`] would count them).
    pub counts: EvalCounts,
    /// Levels consumed (multiplicative depth in rescales).
    pub depth: usize,
    /// Distinct rotation steps (Galois keys needed).
    pub rotation_steps: Vec<i64>,
    /// Largest error of the simulated output against the plaintext matmul.
    pub max_abs_err: f64,
}

/// Level the simulator starts at (deep enough for every op; only differences are reported).
const SIM_TOP_LEVEL: usize = 16;

/// Runs `op` at `shape` on the slot simulator with random inputs (fixed seed): its counts,
/// depth, rotation steps, and its error against the plaintext matmul (float rounding only).
pub fn plan_counts(op: BlbOp, shape: &ModelShape) -> Result<PlanReport, LinearError> {
    let mut prg = Prg::new([7; 16]);
    let inp = op_inputs(op, shape, &mut prg)?;
    let sim = SlotSim::new(shape.slots);
    let a: Vec<SimCt> = inp
        .a
        .into_iter()
        .map(|v| sim.encrypt(v, SIM_TOP_LEVEL))
        .collect();
    let b: Vec<SimCt> = inp
        .b
        .into_iter()
        .map(|v| sim.encrypt(v, SIM_TOP_LEVEL))
        .collect();
    let out = run_op(&sim, op, shape, &a, &b, inp.w.as_ref())?;
    let depth = SIM_TOP_LEVEL - out.iter().map(|c| c.level).min().unwrap_or(SIM_TOP_LEVEL);
    let got = inp
        .out_packing
        .unpack(&out.into_iter().map(|c| c.v).collect::<Vec<_>>())?;
    let err = max_err(&got, &inp.expect)?;
    Ok(PlanReport {
        counts: sim.counts(),
        depth,
        rotation_steps: sim.rotation_steps(),
        max_abs_err: err,
    })
}

fn max_err(got: &[Mat], expect: &[Mat]) -> Result<f64, LinearError> {
    let mut e = 0.0f64;
    for (g, x) in got.iter().zip(expect) {
        e = e.max(g.max_abs_diff(x)?);
    }
    Ok(e)
}

/// A timed run of one op on real CKKS.
#[derive(Clone, Debug, PartialEq)]
pub struct CkksRun {
    /// The evaluator's counts for the op.
    pub counts: EvalCounts,
    /// The simulator's counts for the same op (equal to `counts`).
    pub sim_counts: EvalCounts,
    /// Wall-clock seconds of the op (encoding of masks and weights included).
    pub seconds: f64,
    /// Of which encoding plaintexts.
    pub encode_seconds: f64,
    /// Largest error of the decrypted output against the plaintext matmul.
    pub max_abs_err: f64,
}

/// Runs `op` at `shape` with real CKKS at `params` (`shape.slots` must equal `N/2`; the chain
/// needs the op's depth in rescales: 4 for `Qk`/`Sv`, 1 otherwise): generates keys (Galois
/// keys for exactly the simulator's rotation steps), encrypts random inputs, times the op,
/// decrypts and compares with the plaintext product.
pub fn run_ckks(
    op: BlbOp,
    shape: &ModelShape,
    params: &CkksParams,
    seed: [u8; 16],
) -> Result<CkksRun, LinearError> {
    if params.slots() != shape.slots {
        return Err(LinearError::BadParams(format!(
            "shape for {} slots, parameters have {}",
            shape.slots,
            params.slots()
        )));
    }
    let plan = plan_counts(op, shape)?;
    if plan.depth >= params.max_level() {
        return Err(LinearError::BadParams(format!(
            "op needs {} rescales, parameters allow {}",
            plan.depth,
            params.rescale_depth()
        )));
    }
    let mut prg = Prg::new(seed);
    let inp = op_inputs(op, shape, &mut prg)?;
    let sk = CkksSecretKey::generate(params, &mut prg);
    let eval = CkksEvaluator::new(params)
        .with_relin_key(sk.relin_key(params, &mut prg)?)
        .with_galois_keys(sk.galois_keys(params, &plan.rotation_steps, false, &mut prg)?);
    let top = params.max_level();
    let enc = |v: &Vec<f64>, prg: &mut Prg| -> Result<CkksCiphertext, LinearError> {
        Ok(sk.encrypt(
            params,
            &params.encode_real(v, top, params.default_scale())?,
            prg,
        )?)
    };
    let a = inp
        .a
        .iter()
        .map(|v| enc(v, &mut prg))
        .collect::<Result<Vec<_>, _>>()?;
    let b = inp
        .b
        .iter()
        .map(|v| enc(v, &mut prg))
        .collect::<Result<Vec<_>, _>>()?;
    let ops = CkksOps::new(&eval);
    let before = eval.stats().snapshot();
    let t = Instant::now();
    let out = run_op(&ops, op, shape, &a, &b, inp.w.as_ref())?;
    let seconds = t.elapsed().as_secs_f64();
    let counts = eval.stats().snapshot() - before;
    let dec = out
        .iter()
        .map(|c| {
            Ok(sk
                .decrypt_decode(params, c)?
                .into_iter()
                .map(|z| z.re)
                .collect())
        })
        .collect::<Result<Vec<Vec<f64>>, LinearError>>()?;
    let got = inp.out_packing.unpack(&dec)?;
    Ok(CkksRun {
        counts,
        sim_counts: plan.counts,
        seconds,
        encode_seconds: ops.encode_seconds(),
        max_abs_err: max_err(&got, &inp.expect)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nectar_he::ckks::CkksParamsLiteral;

    /// Small multi-head shape exercising every step (J = 2 / 4 operand ciphertexts, c = 4
    /// groups, ρ = 4 babies) at N = 2^13.
    const SMALL: ModelShape = ModelShape {
        tokens: 16,
        hidden: 16,
        heads: 2,
        ffn: 32,
        slots: 4096,
        mh_groups: Some(4),
    };

    /// N = 2^13: data primes {45, 30, 30, 30, 30} (four rescales, the ct-ct matmul's depth),
    /// special prime 45 (210 bits <= 218), Δ = 2^30.
    fn small_params() -> CkksParams {
        CkksParams::new(
            CkksParamsLiteral::from_bit_sizes(8192, &[45, 30, 30, 30, 30], Some(45), 30).unwrap(),
        )
        .unwrap()
    }

    /// The closed-form rotation count of [`matmul_cc`].
    fn cc_rotations(lay: &MhLayout) -> u64 {
        let (j, c, rho, l) = (
            lay.operand_cts() as u64,
            lay.c as u64,
            lay.rho() as u64,
            lay.l as u64,
        );
        let step1 = if c > 1 { j * c } else { 0 };
        let step3 = if c > 1 { rho * c } else { 0 };
        step1 + 2 * j * (c - 1) + 2 * j * (rho - 1) + step3.min(l)
    }

    #[test]
    fn simulated_ct_ct_matmul_is_exact_on_many_layouts() {
        for (sh, groups) in [
            (
                ModelShape {
                    tokens: 8,
                    hidden: 8,
                    heads: 2,
                    ffn: 8,
                    slots: 256,
                    mh_groups: None,
                },
                None,
            ),
            (
                ModelShape {
                    tokens: 16,
                    hidden: 48,
                    heads: 3,
                    ffn: 8,
                    slots: 1024,
                    mh_groups: None,
                },
                Some(2),
            ),
            (
                ModelShape {
                    tokens: 16,
                    hidden: 64,
                    heads: 2,
                    ffn: 8,
                    slots: 512,
                    mh_groups: None,
                },
                Some(1),
            ),
            (
                ModelShape {
                    tokens: 8,
                    hidden: 32,
                    heads: 2,
                    ffn: 8,
                    slots: 128,
                    mh_groups: None,
                },
                Some(8),
            ),
            (SMALL, Some(4)),
        ] {
            let sh = ModelShape {
                mh_groups: groups,
                ..sh
            };
            for op in [BlbOp::Qk, BlbOp::Sv] {
                let r = plan_counts(op, &sh).unwrap();
                let lay = sh.layout(op).unwrap();
                assert!(
                    r.max_abs_err < 1e-9,
                    "{op:?} {sh:?}: error {}",
                    r.max_abs_err
                );
                assert_eq!(r.counts.rotations, cc_rotations(&lay), "{op:?} {lay:?}");
                assert_eq!(r.counts.ct_ct_mults, (lay.operand_cts() * lay.l) as u64);
                assert!(r.depth <= 4);
            }
        }
    }

    /// BLB Table 5 / Table 7 at the paper's shapes (s = 16384): rotations at most the paper's
    /// BLB figures, ct-ct products equal to Table 5's, simulated values correct.
    #[test]
    fn paper_shapes_meet_table5_and_table7() {
        let cases = [
            (ModelShape::BERT_LARGE, BlbOp::Qk, 640, Some(1024)),
            (ModelShape::BERT_LARGE, BlbOp::Sv, 1056, Some(2048)),
            (ModelShape::GPT2_BASE, BlbOp::Qk, 488, None),
            (ModelShape::GPT2_BASE, BlbOp::Sv, 488, None),
        ];
        for (sh, op, paper_rot, paper_mult) in cases {
            let r = plan_counts(op, &sh).unwrap();
            eprintln!(
                "{op:?} L={} D={} H={}: {:?}, depth {}, {} keys, err {:.1e}",
                sh.tokens,
                sh.hidden,
                sh.heads,
                r.counts,
                r.depth,
                r.rotation_steps.len(),
                r.max_abs_err
            );
            assert!(
                r.counts.rotations <= paper_rot,
                "{op:?}: {} rotations > paper's {paper_rot}",
                r.counts.rotations
            );
            if let Some(m) = paper_mult {
                assert_eq!(r.counts.ct_ct_mults, m);
            }
            assert_eq!(r.depth, 4);
            assert!(r.max_abs_err < 1e-9);
        }
        // The closed forms: BERT-large Qk J = 8, c = 8, ρ = 16: 64 + 112 + 240 + 128 = 544;
        // Sv J = 16: 128 + 224 + 480 + 128 = 960.
        assert_eq!(
            plan_counts(BlbOp::Qk, &ModelShape::BERT_LARGE)
                .unwrap()
                .counts
                .rotations,
            544
        );
        assert_eq!(
            plan_counts(BlbOp::Sv, &ModelShape::BERT_LARGE)
                .unwrap()
                .counts
                .rotations,
            960
        );
    }

    #[test]
    fn simulated_ct_pt_matmuls_are_exact() {
        let sh = ModelShape {
            tokens: 8,
            hidden: 16,
            heads: 2,
            ffn: 64,
            slots: 256,
            mh_groups: None,
        };
        for op in [BlbOp::AttnOut, BlbOp::Ffn1, BlbOp::Ffn2] {
            let r = plan_counts(op, &sh).unwrap();
            assert!(r.max_abs_err < 1e-9, "{op:?}: {}", r.max_abs_err);
            assert_eq!(r.depth, 1);
        }
        // X (8 x 16, 1 ct of 32 blocks) · W (16 x 64, 2 cts): B = 8, G = 4: 7 + 2·3 rotations.
        assert_eq!(plan_counts(BlbOp::Ffn1, &sh).unwrap().counts.rotations, 13);
    }

    #[test]
    fn sum_and_broadcast_follow_table3() {
        let sim = SlotSim::new(64);
        let x = Mat::from_fn(8, 4, |r, c| (r * 4 + c) as f64);
        let sums: Vec<f64> = (0..8).map(|r| (0..4).map(|c| x.get(r, c)).sum()).collect();
        // L·D = 32 < s: sum + mask + broadcast, 2·log2 D rotations and one product.
        let v = Packing::SpatialFirst {
            rows: 8,
            cols: 4,
            slots: 64,
        }
        .pack(&[x])
        .unwrap();
        let ct = sim.encrypt(v[0].clone(), 3);
        let out = sum_broadcast(&sim, &[ct], 8, 4).unwrap();
        assert_eq!((sim.counts().rotations, sim.counts().ct_pt_mults), (4, 1));
        for k in 0..4 {
            assert_eq!(&out.v[k * 8..k * 8 + 8], &sums[..]);
        }
        // L·D = 2s (two ciphertexts): every block holds the sum after log2(s/L) rotations.
        let sim = SlotSim::new(64);
        let x = Mat::from_fn(8, 16, |r, c| (r + 3 * c) as f64);
        let v = Packing::SpatialFirst {
            rows: 8,
            cols: 16,
            slots: 64,
        }
        .pack(std::slice::from_ref(&x))
        .unwrap();
        let cts: Vec<SimCt> = v.into_iter().map(|v| sim.encrypt(v, 3)).collect();
        let out = sum_broadcast(&sim, &cts, 8, 16).unwrap();
        assert_eq!((sim.counts().rotations, sim.counts().ct_pt_mults), (3, 0));
        for p in 0..64 {
            let r = p % 8;
            assert_eq!(out.v[p], (0..16).map(|c| x.get(r, c)).sum::<f64>());
        }
    }

    /// Real CKKS at N = 2^13: every op decrypts to the plaintext product and the evaluator's
    /// counts equal the simulator's.
    #[test]
    fn real_ckks_matches_plaintext_and_simulator_counts() {
        let params = small_params();
        for (op, tol) in [
            (BlbOp::Qk, 1e-2),
            (BlbOp::Sv, 1e-3),
            (BlbOp::AttnOut, 1e-3),
            (BlbOp::Ffn1, 1e-3),
        ] {
            let r = run_ckks(op, &SMALL, &params, [3; 16]).unwrap();
            eprintln!(
                "{op:?}: {:?} in {:.2} s (encode {:.2} s), err {:.1e}",
                r.counts, r.seconds, r.encode_seconds, r.max_abs_err
            );
            assert!(r.max_abs_err < tol, "{op:?}: error {}", r.max_abs_err);
            assert_eq!(r.counts, r.sim_counts, "{op:?}");
        }
    }

    #[test]
    fn real_ckks_sum_broadcast_counts_match() {
        let params = small_params();
        let mut prg = Prg::new([5; 16]);
        let sk = CkksSecretKey::generate(&params, &mut prg);
        let steps: Vec<i64> = (0..9).map(|i| 16i64 << i).flat_map(|k| [k, -k]).collect();
        let eval = CkksEvaluator::new(&params)
            .with_galois_keys(sk.galois_keys(&params, &steps, false, &mut prg).unwrap());
        let ops = CkksOps::new(&eval);
        let x = rand_mat(&mut prg, 16, 64, 1.0);
        let v = Packing::SpatialFirst {
            rows: 16,
            cols: 64,
            slots: 4096,
        }
        .pack(std::slice::from_ref(&x))
        .unwrap();
        let ct = sk
            .encrypt(
                &params,
                &params
                    .encode_real(&v[0], 5, params.default_scale())
                    .unwrap(),
                &mut prg,
            )
            .unwrap();
        let out = sum_broadcast(&ops, &[ct], 16, 64).unwrap();
        let sim = SlotSim::new(4096);
        let sout = sum_broadcast(&sim, &[sim.encrypt(v[0].clone(), 5)], 16, 64).unwrap();
        assert_eq!(eval.stats().snapshot(), sim.counts());
        assert_eq!(sim.counts().rotations, 12);
        let dec = sk.decrypt_decode(&params, &out).unwrap();
        for (p, (z, sv)) in dec.iter().zip(&sout.v).take(16 * 64).enumerate() {
            let want: f64 = (0..64).map(|c| x.get(p % 16, c)).sum();
            assert!((z.re - want).abs() < 1e-3 && (sv - want).abs() < 1e-9);
        }
    }

    /// ct-pt matmuls at the paper's shapes: rotations `n_in(B − 1) + n_out(G − 1)` (BSGS over
    /// the `s/L` blocks), values correct. E.g. BERT-large FFN1: 8 inputs, 32 outputs, B = 16,
    /// G = 8: 120 + 224 = 344.
    #[test]
    fn paper_shapes_ct_pt_counts() {
        for (sh, want) in [
            (ModelShape::GPT2_BASE, [105, 177, 177]),
            (ModelShape::BERT_LARGE, [232, 344, 344]),
        ] {
            for (op, w) in [BlbOp::AttnOut, BlbOp::Ffn1, BlbOp::Ffn2]
                .into_iter()
                .zip(want)
            {
                let r = plan_counts(op, &sh).unwrap();
                assert_eq!((r.counts.rotations, r.depth), (w, 1), "{op:?} {sh:?}");
                assert!(r.max_abs_err < 1e-9);
            }
        }
    }
}
