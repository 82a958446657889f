//! Partition-window chooser and the plaintext cost model of one OLT (BumbleBee §III-D,
//! REFERENCE.md §1.5–1.6).
//!
//! For shape `(k, m, n)` and windows `(k_w, m_w, n_w)`, with `k' = ⌈k/k_w⌉` etc.:
//! - `n1 = m'·min(k', n')` ciphertexts sent by the encrypting party (the one with fewer blocks);
//! - InterLeave: `n2 = ⌈k'n'/m_w⌉·m_w` automorphisms, `n3 = ⌈k'n'/m_w⌉` ciphertexts returned;
//! - KRDY (no compression): `n3 = k'n'`, no automorphisms;
//! - KRDY⁺ (PackLWEs): `n3 = ⌈kn/N⌉`, about `kn` automorphisms.
//!
//! The chooser minimises `P_C·n2 + P_B·(n1 + n3) + P_M·(k'm'n')` (the last term, ct-pt products,
//! is the artifact's tie-breaker) over `m_w` a power of two, `k_w·m_w·n_w ≤ N`, `m_w ≤ m`,
//! `n_w = min(n, ⌊N/(k_w m_w)⌋)`. The prices are LOCAL (measured per machine); the default is the
//! artifact's ratio (1000 : 1 : 0.1 for a ciphertext : an automorphism : a product).

use crate::krdy::{Shape, Windows};
use crate::LinearError;

/// How the result ciphertexts of an OLT are compressed before they are returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Plain KRDY: every block product is returned as is.
    Krdy,
    /// KRDY⁺: PackLWEs on every useful coefficient.
    KrdyPlus,
    /// BumbleBee: InterLeave with the dynamic strategy of §III-E2 (none for a single result
    /// ciphertext, PackLWEs when `kn ≪ N`).
    Interleave,
}

impl Variant {
    pub fn parse(s: &str) -> Option<Variant> {
        match s {
            "krdy" => Some(Variant::Krdy),
            "krdy_plus" | "krdy+" | "packlwes" => Some(Variant::KrdyPlus),
            "interleave" | "bumblebee" => Some(Variant::Interleave),
            _ => None,
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Variant::Krdy => "krdy",
            Variant::KrdyPlus => "krdy_plus",
            Variant::Interleave => "interleave",
        }
    }
}

/// The compression actually run for one OLT (after the dynamic strategy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    None,
    PackLwes,
    Interleave,
}

/// Most block products an `Interleave`-variant plan may make the evaluator hold at once
/// (AGREEMENT; see [`OltPlan::choose`]): 2048 response-level ciphertexts are about 270 MB at
/// N = 8192.
pub const MAX_HELD_PRODUCTS: usize = 2048;

/// Prices of the cost model (LOCAL).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostModel {
    /// `P_B`: one ciphertext on the wire.
    pub per_ct: f64,
    /// `P_C`: one homomorphic automorphism (key switch).
    pub per_auto: f64,
    /// One ciphertext × plaintext product.
    pub per_mult: f64,
    /// One plaintext block of the evaluating party encoded and transformed to NTT form
    /// ([`OltPlan::encodes`] per call). Zero in the artifact's model, which ignores it.
    pub per_encode: f64,
    /// One byte on the wire, on top of `per_ct`: the plan's predicted bytes
    /// ([`OltPlan::bytes`] with `ct_bytes`) are priced too. Zero in the artifact and
    /// `lan_commodity` models, which price ciphertexts by count only.
    pub per_byte: f64,
    /// Ciphertext sizes `per_byte` is applied to (unused when `per_byte` is zero).
    pub ct_bytes: CtBytes,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            per_ct: 1000.0,
            per_auto: 1.0,
            per_mult: 0.1,
            per_encode: 0.0,
            per_byte: 0.0,
            ct_bytes: CtBytes::NONE,
        }
    }
}

impl CostModel {
    /// AGREEMENT (both parties must choose the same windows): prices in milliseconds of wall
    /// time for a commodity machine (2 cores) on a 1 Gbit/s LAN, measured on the development VM
    /// (`examples/profile_olt.rs`, `docs/results/linear.md`, "Server-side profile"):
    /// - `per_ct` = 2.5: a ciphertext on the wire (167 kB query / 233 kB response at 1 Gbit/s,
    ///   1.3–1.9 ms) plus the client's encryption or decryption of it (~1 ms);
    /// - `per_auto` = 2.5: one InterLeave step at the response level: the automorphism with key
    ///   switch (1.1 ms), the monomial/add/sub glue (0.8 ms) and the mod switch of the block
    ///   product that feeds it (0.6 ms);
    /// - `per_mult` = 0.09: one ct × pt multiply-accumulate in NTT form (6 limbs);
    /// - `per_encode` = 0.3: one evaluator block `π(·)` lifted and transformed (3 forward NTTs).
    ///
    /// On such a machine an automorphism costs about as much as sending a ciphertext, so the
    /// chooser lands on much smaller `m_w` than with the artifact's 1000 : 1 ratio (which assumes
    /// 64 cores and a 1 : 1000 compute : network ratio).
    pub fn lan_commodity() -> Self {
        CostModel {
            per_ct: 2.5,
            per_auto: 2.5,
            per_mult: 0.09,
            per_encode: 0.3,
            per_byte: 0.0,
            ct_bytes: CtBytes::NONE,
        }
    }

    /// AGREEMENT. The default suite's prices (`olt-cost = balanced`): fewest bytes first, but a
    /// plan may spend one more MB of traffic where it saves at least 0.1 s of computation.
    /// Compute prices in milliseconds, fitted (least squares, non-negative) on 16 OLT runs of
    /// MiniLM, BERT-base and LLaMA-7B shapes with forced windows on the 2-core development VM
    /// (`nectar bench linear --windows`, `scripts/bench_olt_prices.sh`; the runs and the fit are
    /// in `docs/results/olt-prices.md`), after the InterLeave butterflies went parallel:
    /// - `per_auto` = 0.64: one InterLeave step (automorphism, key switch, glue, mod switch);
    /// - `per_mult` = 0.089: one ct × pt multiply-accumulate;
    /// - `per_encode` = 0.0023: one evaluator block encoded and transformed;
    /// - `per_ct` = 0: a ciphertext's encryption / decryption did not show in the fit (its
    ///   bytes are priced by `per_byte`);
    /// - `per_byte` = 0.1 ms per kB, with the sizes of `ct` (e.g. [`CtBytes::olt`]): 12.5× the
    ///   wire time of a 1 Gbit/s LAN (8 ms per MB), so bytes still weigh more than time. The
    ///   rate is the policy. It was 0.6 ms per kB (fewest bytes nearly always) until MiniLM's
    ///   automorphisms were measured to cost more than their saved bytes: at 0.1, MiniLM 32
    ///   tokens sends 381.9 MB instead of 357.9 MB and ran 25.3–26.5 s in isolated runs against
    ///   31.0–33.2 s at 0.6 (`docs/results/suites.md`); BERT-base 128 tokens stays under 5 GB
    ///   (4.91 GB, `docs/results/e2e.md`).
    ///
    /// The artifact's model (1000 : 1) keeps choosing the fewest ciphertexts however many
    /// automorphisms that costs: for a 32-token MiniLM FFN1 `(32, 384, 1536)` it picks windows
    /// `(32, 256, 1)`, 1536 automorphisms, 1.73 MB and 1.27 s here, where `(32, 64, 4)` needs
    /// 384 automorphisms, 2.40 MB and 0.47 s (`docs/results/olt-prices.md`).
    pub fn balanced(ct: CtBytes) -> Self {
        CostModel {
            per_ct: 0.0,
            per_auto: 0.64,
            per_mult: 0.089,
            per_encode: 0.0023,
            per_byte: 0.1e-3,
            ct_bytes: ct,
        }
    }

    /// [`CostModel::balanced`] with the sizes of the OLT's ciphertexts
    /// ([`nectar_he::Params::bumblebee_olt`]): what `olt-cost = balanced` runs.
    pub fn balanced_olt() -> Self {
        CostModel::balanced(CtBytes::olt(&nectar_he::Params::bumblebee_olt()))
    }

    /// A named model: `artifact` (the default), `lan_commodity` or `balanced`
    /// ([`CostModel::balanced_olt`]).
    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "artifact" | "default" => Some(CostModel::default()),
            "lan_commodity" | "lan-commodity" | "commodity" => Some(CostModel::lan_commodity()),
            "balanced" => Some(CostModel::balanced_olt()),
            _ => None,
        }
    }

    /// Prices in seconds from measurements on this machine: `auto_seconds` per automorphism
    /// (e.g. `nectar_bench::linear::measure_automorphism_seconds`), `ct_bytes` per ciphertext
    /// sent over a link of `bandwidth_bps` bits/s; products are priced at `mult_seconds`.
    pub fn measured(
        auto_seconds: f64,
        mult_seconds: f64,
        ct_bytes: usize,
        bandwidth_bps: f64,
    ) -> Self {
        CostModel {
            per_ct: ct_bytes as f64 * 8.0 / bandwidth_bps,
            per_auto: auto_seconds,
            per_mult: mult_seconds,
            per_encode: 0.0,
            per_byte: 0.0,
            ct_bytes: CtBytes::NONE,
        }
    }
}

/// Bytes of one ciphertext each way (from the HE layer's serialization).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtBytes {
    /// A fresh ciphertext sent by the encrypting party.
    pub query: usize,
    /// A fresh ciphertext sent at the response level ([`QueryLevel::Response`]).
    pub low_query: usize,
    /// A result ciphertext returned after H2A (mod-switched).
    pub response: usize,
}

impl CtBytes {
    /// No sizes (cost models that do not price bytes).
    pub const NONE: CtBytes = CtBytes { query: 0, low_query: 0, response: 0 };

    /// The OLT's ciphertexts under `params`: a fresh seeded query at the top level (and at the
    /// response level), a full response at [`crate::h2a::response_level`] (every coefficient,
    /// as after InterLeave).
    pub fn olt(params: &nectar_he::Params) -> CtBytes {
        let resp = crate::h2a::olt_response_level(params);
        CtBytes {
            query: params.ciphertext_len(params.max_level(), true),
            low_query: params.ciphertext_len(resp, true),
            response: params.ciphertext_len(resp, false),
        }
    }
}

/// Everything public about one OLT: who encrypts, windows, compression and its counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OltPlan {
    pub shape: Shape,
    pub windows: Windows,
    /// Ring degree `N`.
    pub degree: usize,
    pub compression: Compression,
    /// The rhs holder encrypts (role flip, `k' > n'`).
    pub rhs_encrypts: bool,
    /// `n1`: ciphertexts sent by the encrypting party.
    pub sent_cts: usize,
    /// Ciphertext × plaintext products.
    pub mults: usize,
    /// Result ciphertexts before compression (`k'n'`).
    pub products: usize,
    /// `n2`: automorphisms of the compression (upper bound as in the paper: a partial
    /// InterLeave group runs fewer, [`crate::interleave::interleave_autos`]; the window prices
    /// keep the bound).
    pub autos: usize,
    /// `n3`: ciphertexts returned.
    pub returned_cts: usize,
    /// The level the encryptor's query travels at ([`OltPlan::with_weight_query`]).
    pub query: QueryLevel,
}

/// The level of an OLT's query ciphertexts (AGREEMENT: part of the public plan).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueryLevel {
    /// The top level (BumbleBee): the evaluator's plaintexts may be anything, a uniform share
    /// included, and the evaluator switches down to where its products fit.
    Top,
    /// The response level ([`crate::h2a::olt_response_level`]), encrypted there fresh: for an
    /// evaluator whose plaintexts are its weights and fit that level with a fresh query's noise
    /// ([`crate::olt::weight_query_fits`]; an error before any message otherwise). The query
    /// then costs the response level's primes instead of all of them (2 of 3 in both OLT sets).
    Response,
}

impl OltPlan {
    /// The plan for given windows; `Interleave` applies the dynamic strategy.
    pub fn new(
        shape: Shape,
        w: Windows,
        degree: usize,
        variant: Variant,
    ) -> Result<Self, LinearError> {
        Windows::new(w.kw, w.mw, w.nw, degree, variant != Variant::Krdy)?;
        let (kb, mb, nb) = w.blocks(shape);
        let products = kb * nb;
        let kn = shape.k * shape.n;
        let compression = match variant {
            Variant::Krdy => Compression::None,
            Variant::KrdyPlus => Compression::PackLwes,
            Variant::Interleave => {
                if products <= 1 {
                    Compression::None
                } else if w.mw >= kn {
                    // kn ≪ N: fewer useful coefficients than one InterLeave group (artifact rule).
                    Compression::PackLwes
                } else {
                    Compression::Interleave
                }
            }
        };
        let (autos, returned_cts) = match compression {
            Compression::None => (0, products),
            Compression::Interleave => {
                let g = products.div_ceil(w.mw);
                (g * w.mw, g)
            }
            Compression::PackLwes => {
                let g = kn.div_ceil(degree);
                let last = kn - (g - 1) * degree;
                let trace = (degree / last.next_power_of_two()).trailing_zeros() as usize;
                ((g - 1) * degree + last.next_power_of_two() + trace, g)
            }
        };
        Ok(OltPlan {
            shape,
            windows: w,
            degree,
            compression,
            rhs_encrypts: crate::krdy::rhs_encrypts(shape, w),
            sent_cts: mb * kb.min(nb),
            mults: kb * mb * nb,
            products,
            autos,
            returned_cts,
            query: QueryLevel::Top,
        })
    }

    /// This plan with its query at the response level ([`QueryLevel::Response`]) where the
    /// client encrypts (`X·W` with `X`'s holder encrypting); a plan whose weight holder
    /// encrypts keeps the top level (the client's plaintexts are uniform shares).
    pub fn with_weight_query(mut self) -> Self {
        if !self.rhs_encrypts {
            self.query = QueryLevel::Response;
        }
        self
    }

    /// Plaintext blocks the evaluating party encodes per call: its own matrix's blocks
    /// (`k'·m'` when the rhs holder encrypts, `m'·n'` otherwise).
    pub fn encodes(&self) -> usize {
        let (kb, mb, nb) = self.windows.blocks(self.shape);
        if self.rhs_encrypts {
            kb * mb
        } else {
            mb * nb
        }
    }

    /// The model's cost of this plan.
    pub fn cost(&self, c: &CostModel) -> f64 {
        let base = c.per_ct * (self.sent_cts + self.returned_cts) as f64
            + c.per_auto * self.autos as f64
            + c.per_mult * self.mults as f64;
        if c.per_encode == 0.0 && c.per_byte == 0.0 {
            // Bit-identical to the artifact's formula (the default model's choices are pinned).
            base
        } else {
            let (sent, returned) = self.bytes(c.ct_bytes);
            base + c.per_encode * self.encodes() as f64 + c.per_byte * (sent + returned) as f64
        }
    }

    /// Predicted payload bytes `(encryptor → evaluator, evaluator → encryptor)`, the query at
    /// its plan's level.
    pub fn bytes(&self, b: CtBytes) -> (usize, usize) {
        let q = match self.query {
            QueryLevel::Top => b.query,
            QueryLevel::Response => b.low_query,
        };
        (self.sent_cts * q, self.returned_cts * b.response)
    }

    /// Block products the evaluator holds at once: every one when they are returned as they
    /// are (`None`) or packed together (`PackLwes`: the packing tree needs them all), one
    /// InterLeave group otherwise.
    pub fn held_products(&self) -> usize {
        match self.compression {
            Compression::None | Compression::PackLwes => self.products,
            Compression::Interleave => self.windows.mw.min(self.products),
        }
    }

    /// Choose the windows minimising the cost model for `variant`. For `Interleave` (the
    /// protocol's own variant) plans that would hold more than [`MAX_HELD_PRODUCTS`] block
    /// products at once are passed over while any plan stays under it (AGREEMENT: both parties
    /// apply the same rule): the artifact's rule "PackLWEs when `k·n ≤ m_w`" otherwise picks
    /// `(1, N, 1)` windows for a 17-token embedding lookup, 6528 products of one coefficient
    /// each — 1.8 GB on the server and 12.6 s, against 0.3 GB and 2.6 s for 16 tokens. The
    /// KRDY baselines keep the unconstrained choice.
    pub fn choose(
        shape: Shape,
        degree: usize,
        variant: Variant,
        c: &CostModel,
    ) -> Result<Self, LinearError> {
        Self::choose_for(shape, degree, variant, c, QueryLevel::Top)
    }

    /// [`OltPlan::choose`] for a product whose query travels at `query` where the client
    /// encrypts ([`OltPlan::with_weight_query`]: a weight product under `olt-ring = narrow`):
    /// each candidate is priced with its own query's bytes, so the cheaper low query lets a
    /// plan trade more query ciphertexts for fewer automorphisms (a decoding step's LM head,
    /// `1 × 576 × 49152`: windows `(1, 32, 256)` and 192 automorphisms instead of
    /// `(1, 64, 128)` and 384; its FFN2, `1 × 1536 × 576`: 128 instead of 256).
    pub fn choose_for(
        shape: Shape,
        degree: usize,
        variant: Variant,
        c: &CostModel,
        query: QueryLevel,
    ) -> Result<Self, LinearError> {
        if !degree.is_power_of_two() {
            return Err(LinearError::BadParams(format!(
                "ring degree {degree} is not a power of two"
            )));
        }
        let mut best: Option<(f64, OltPlan)> = None;
        let mut best_bounded: Option<(f64, OltPlan)> = None;
        for kw in 1..=shape.k.min(degree) {
            let mut mw = 1;
            while kw * mw <= degree && mw <= shape.m.max(1) {
                let nw = shape.n.min(degree / (kw * mw));
                if nw >= 1 {
                    let w = Windows { kw, mw, nw };
                    let p = OltPlan::new(shape, w, degree, variant)?;
                    let p = if query == QueryLevel::Response { p.with_weight_query() } else { p };
                    let cost = p.cost(c);
                    if variant == Variant::Interleave
                        && p.held_products() <= MAX_HELD_PRODUCTS
                        && best_bounded.as_ref().is_none_or(|(bc, _)| cost <= *bc)
                    {
                        best_bounded = Some((cost, p.clone()));
                    }
                    if best.as_ref().is_none_or(|(bc, _)| cost <= *bc) {
                        best = Some((cost, p));
                    }
                }
                mw = if variant == Variant::Krdy {
                    mw + 1
                } else {
                    mw * 2
                };
            }
        }
        best_bounded
            .or(best)
            .map(|(_, p)| p)
            .ok_or_else(|| LinearError::BadShape(format!("{shape:?}: no window fits N = {degree}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_paper_formulas() {
        let s = Shape::new(128, 768, 768).unwrap();
        let w = Windows::new(8, 64, 16, 8192, true).unwrap();
        let p = OltPlan::new(s, w, 8192, Variant::Interleave).unwrap();
        assert_eq!(
            (p.sent_cts, p.products, p.returned_cts, p.autos),
            (12 * 16, 16 * 48, 12, 768)
        );
        assert!(!p.rhs_encrypts);
        let p = OltPlan::new(s, w, 8192, Variant::Krdy).unwrap();
        assert_eq!(p.returned_cts, 768);
    }

    #[test]
    fn chooser_respects_constraints_and_dynamic_rule() {
        let c = CostModel::default();
        for &(k, m, n) in &[
            (1, 50257, 768),
            (128, 768, 768),
            (16, 768, 3072),
            (1, 1, 1),
            (3, 5, 7),
        ] {
            let s = Shape::new(k, m, n).unwrap();
            for v in [Variant::Krdy, Variant::KrdyPlus, Variant::Interleave] {
                let p = OltPlan::choose(s, 8192, v, &c).unwrap();
                let w = p.windows;
                assert!(w.kw * w.mw * w.nw <= 8192);
                if v != Variant::Krdy {
                    assert!(w.mw.is_power_of_two());
                }
            }
        }
        let p =
            OltPlan::choose(Shape::new(1, 1, 1).unwrap(), 8192, Variant::Interleave, &c).unwrap();
        assert_eq!(p.compression, Compression::None);
        // A smaller automorphism price never chooses a smaller m_w.
        let s = Shape::new(128, 768, 768).unwrap();
        let cheap = CostModel {
            per_auto: 0.01,
            ..c
        };
        let a = OltPlan::choose(s, 8192, Variant::Interleave, &c).unwrap();
        let b = OltPlan::choose(s, 8192, Variant::Interleave, &cheap).unwrap();
        assert!(b.sent_cts + b.returned_cts <= a.sent_cts + a.returned_cts);
    }

    /// The default (artifact) model's choices are pinned (the e2e engine and the paper
    /// comparison depend on them); `lan_commodity` trades automorphisms and plaintext encodings
    /// for query ciphertexts.
    #[test]
    fn default_choices_pinned_and_lan_commodity() {
        let cases = [
            ((8, 1536, 384), (8, 1024, 1), (4, 64, 32)),
            ((16, 768, 768), (16, 512, 1), (8, 32, 32)),
            ((16, 768, 3072), (16, 256, 2), (4, 32, 64)),
            ((16, 3072, 768), (16, 512, 1), (4, 64, 32)),
            ((16, 30522, 384), (16, 512, 1), (2, 512, 8)),
            ((128, 768, 768), (128, 64, 1), (32, 16, 16)),
        ];
        for ((k, m, n), art, lan) in cases {
            let s = Shape::new(k, m, n).unwrap();
            let w = |c: &CostModel| {
                let p = OltPlan::choose(s, 8192, Variant::Interleave, c).unwrap();
                (p.windows.kw, p.windows.mw, p.windows.nw)
            };
            assert_eq!(w(&CostModel::default()), art, "{:?}", (k, m, n));
            assert_eq!(w(&CostModel::lan_commodity()), lan, "{:?}", (k, m, n));
        }
        assert_eq!(CostModel::by_name("artifact"), Some(CostModel::default()));
        assert_eq!(
            CostModel::by_name("lan_commodity"),
            Some(CostModel::lan_commodity())
        );
        assert_eq!(CostModel::by_name("nope"), None);
    }

    /// The planner's sizes are the wire's: a fresh query and a switched-down response.
    #[test]
    fn olt_ct_bytes_match_serialization() {
        let p = nectar_he::Params::bumblebee_olt();
        let mut prg = nectar_math::Prg::new([5; 16]);
        let sk = nectar_he::SecretKey::generate(&p, &mut prg);
        let coeffs: Vec<u64> = (0..p.n() as u64).collect();
        let pt = nectar_he::Plaintext::from_coeffs(&p, &coeffs, 0).unwrap();
        let mut ct = sk.encrypt(&p, &pt, &mut prg).unwrap();
        let b = CtBytes::olt(&p);
        assert_eq!(ct.serialize(&p).len(), b.query);
        ct.mod_switch_to(&p, crate::h2a::response_level(&p, 64)).unwrap();
        assert_eq!(ct.serialize(&p).len(), b.response);
        assert!(b.response > b.query);
    }

    /// `balanced` (the default suite's) against the artifact's choices at the shapes of the
    /// models it runs: never more automorphisms, at most four times the predicted bytes (the
    /// most, 3.9×, at LLaMA-7B's 8-token O projection, where it saves 3584 of 4096
    /// automorphisms), and the choices pinned (AGREEMENT: both parties derive them).
    #[test]
    fn balanced_trades_few_bytes_for_automorphisms() {
        let ct = CtBytes::olt(&nectar_he::Params::bumblebee_olt());
        let bal = CostModel::balanced_olt();
        assert_eq!(bal, CostModel::balanced(ct));
        assert_eq!(CostModel::by_name("balanced"), Some(bal));
        let cases = [
            // MiniLM, 32 tokens: embedding, QKV, O, FFN1, FFN2.
            ((32, 30522, 384), (32, 256, 1)),
            ((32, 384, 1152), (32, 32, 8)),
            ((32, 384, 384), (32, 64, 4)),
            ((32, 384, 1536), (32, 32, 8)),
            ((32, 1536, 384), (32, 128, 2)),
            // BERT-base, 128 tokens.
            ((128, 768, 2304), (128, 32, 2)),
            ((128, 768, 3072), (128, 16, 4)),
            ((128, 3072, 768), (128, 64, 1)),
            // LLaMA-7B, 8 tokens: O, FFN1 (gate ‖ up), FFN2.
            ((8, 4096, 4096), (8, 128, 8)),
            ((8, 4096, 22016), (8, 64, 16)),
            ((8, 11008, 4096), (8, 256, 4)),
        ];
        for ((k, m, n), want) in cases {
            let s = Shape::new(k, m, n).unwrap();
            let a = OltPlan::choose(s, 8192, Variant::Interleave, &CostModel::default()).unwrap();
            let b = OltPlan::choose(s, 8192, Variant::Interleave, &bal).unwrap();
            let got = (b.windows.kw, b.windows.mw, b.windows.nw);
            assert_eq!(got, want, "{:?}", (k, m, n));
            let total = |p: &OltPlan| {
                let (x, y) = p.bytes(ct);
                x + y
            };
            assert!(b.autos <= a.autos, "{:?}", (k, m, n));
            assert!(total(&b) <= 4 * total(&a), "{:?}", (k, m, n));
        }
    }

    /// A weight product's plan priced with its low query (`choose_for`): the same plans as
    /// `choose` with the query at the response level, each window choice pinned (AGREEMENT)
    /// for a SmolLM2 decoding step and a MiniLM query; the role-flipped plan keeps the top
    /// level.
    #[test]
    fn low_queries_price_their_own_bytes() {
        let bal = CostModel::balanced_olt();
        let ct = bal.ct_bytes;
        assert!(ct.low_query < ct.query);
        let cases = [
            // SmolLM2, one decoding row: qkv, o, ffn1 (gate ‖ up), ffn2, the LM head.
            ((1, 576, 960), (1, 128, 64), (1, 128, 64)),
            ((1, 576, 576), (1, 128, 64), (1, 128, 64)),
            ((1, 576, 3072), (1, 128, 64), (1, 128, 64)),
            ((1, 1536, 576), (1, 256, 32), (1, 128, 64)),
            ((1, 576, 49152), (1, 64, 128), (1, 32, 256)),
            // MiniLM, 32 tokens: QKV, FFN2.
            ((32, 384, 1152), (32, 32, 8), (32, 32, 8)),
            ((32, 1536, 384), (32, 128, 2), (32, 128, 2)),
        ];
        for ((k, m, n), top, low) in cases {
            let s = Shape::new(k, m, n).unwrap();
            let a = OltPlan::choose(s, 8192, Variant::Interleave, &bal).unwrap();
            let b = OltPlan::choose_for(s, 8192, Variant::Interleave, &bal, QueryLevel::Response).unwrap();
            assert_eq!((a.windows.kw, a.windows.mw, a.windows.nw), top, "{:?}", (k, m, n));
            assert_eq!((b.windows.kw, b.windows.mw, b.windows.nw), low, "{:?}", (k, m, n));
            assert_eq!((a.query, b.query), (QueryLevel::Top, QueryLevel::Response));
            assert_eq!(b, OltPlan::new(s, b.windows, 8192, Variant::Interleave).unwrap().with_weight_query());
            assert!(b.cost(&bal) <= a.with_weight_query().cost(&bal));
        }
        let flip = OltPlan::choose_for(Shape::new(4096, 64, 1).unwrap(), 8192, Variant::Interleave, &bal, QueryLevel::Response).unwrap();
        assert!(flip.rhs_encrypts && flip.query == QueryLevel::Top);
    }
}
