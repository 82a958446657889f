//! `nectar-suite`: the typed protocol [`Suite`] — which protocol computes each operator of a private inference
//! (DESIGN.md "Interchangeable protocols behind one trait per operator", "Suites are presets,
//! not forks"; issue 12).
//!
//! One field per operator kind. The kinds in the protocol registry (`nectar_math::registry`:
//! GeLU, SiLU, exp, reciprocal, rsqrt, norm, softmax, comparison, element-wise products, COT
//! extension, the layers' and the attention's matmuls, the OLT's prices and ring, the embedding
//! input, the FFN block) hold a handle into their kind's list
//! ([`Gelu`], [`Silu`], [`Exp`], [`Reciprocal`], [`Rsqrt`], [`Norm`], [`Softmax`], [`Compare`],
//! [`Mul`], [`OtExt`], [`Matmul`], [`SharedMatmul`], the OLT's [`OltCost`] and [`OltRing`], and
//! the embedding input's [`Embed`] and the FFN block's [`Ffn`]); the activation ring
//! ([`ActRing`], a ring the activation protocols run in, not a protocol) is an enum. Every
//! choice knows its name
//! (the one grammar of protocol names, used by `--suite`, `--op`, `--suite-file` and `nectar
//! bench suites`), its source (paper section) and its AGREEMENT parameters — for a registered
//! protocol its own serialized parameters, for the ring its documented constants
//! — which enter the suite's [`Suite::digest`], the session handshake's comparison.
//!
//! Named presets: `nectar` (the default), `bumblebee`, `rotl`, `east`, `blb`, `leaf`, `nimbus`
//! ([`PRESETS`]). [`Suite::validate`] refuses, before any key is generated and in one line
//! naming it, a protocol that is not implemented yet and a combination that cannot run (an
//! activation protocol outside its ring, a softmax composition refusing its exponential or
//! reciprocal, a norm refusing its rsqrt, a protocol BLB's fused blocks do not run).
//!
//! Grammar (one parser, [`Suite::parse`]): `PRESET[+OP=PROTO]...`, e.g. `bumblebee+gelu=p4`;
//! overrides alone ([`Suite::apply_overrides`]): `OP=PROTO[,OP=PROTO]...` (`+` also separates);
//! a TOML file ([`Suite::from_toml`]): `preset = "bumblebee"` and an `[ops]` table.
//!
//! [`security`]: the suite's HE parameter sets and statistical security per session (`nectar
//! params`), from the rows each running protocol states.

pub mod security;

use nectar_math::registry::{Chosen, Kind, Protocol, Security};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

pub use nectar_nn::gelu::Gelu;
pub use nectar_nn::mixed::ActRing;
pub use nectar_nn::silu::Silu;
pub use nectar_nn::exp::Exp;
pub use nectar_nn::reciprocal::Reciprocal;
pub use nectar_nn::rsqrt::Rsqrt;
pub use nectar_nn::norm::Norm;
pub use nectar_nn::softmax::Softmax;
pub use nectar_nn::compare::Compare;
pub use nectar_nn::embed::Embed;
pub use nectar_nn::ffn::Ffn;
pub use nectar_nn::mul::Mul;
pub use nectar_nn::ot_ext::OtExt;
pub use nectar_linear::attention::SharedMatmul;
pub use nectar_linear::layer::Matmul;
pub use nectar_linear::olt_cost::OltCost;
pub use nectar_linear::olt_ring::OltRing;

/// `act-ring`: the ring the activations run in (`nectar_nn::mixed::ActRing`).
impl Choice for ActRing {
    const OPERATOR: &'static str = "act-ring";
    fn all() -> Vec<Self> {
        vec![ActRing::Full, ActRing::Mixed]
    }
    fn name(self) -> &'static str {
        match self {
            ActRing::Full => "full",
            ActRing::Mixed => "mixed",
        }
    }
    fn source(self) -> &'static str {
        match self {
            ActRing::Full => "BumbleBee §II-C (l, f) = (64, 18)",
            ActRing::Mixed => "BumbleBee §V-C mixed bit-width",
        }
    }
    /// Each activation protocol's own parameters name its mixed format; this is the default.
    fn params(self) -> String {
        match self {
            ActRing::Full => String::new(),
            ActRing::Mixed => format!("act={:?} silu={:?}", nectar_nn::mixed::ACT_FORMAT, nectar_nn::silu::SILU_ACT),
        }
    }
}

/// A suite that cannot be built or run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SuiteError {
    #[error("unknown suite preset '{0}' (presets: nectar, bumblebee, rotl, east, blb, leaf, nimbus)")]
    UnknownPreset(String),
    #[error("unknown operator '{0}' (operators: {1})")]
    UnknownOperator(String, String),
    #[error("operator {op}: unknown protocol '{proto}' (choices: {choices})")]
    UnknownProtocol { op: &'static str, proto: String, choices: String },
    #[error("operator {op}: protocol '{proto}' ({source_ref}) is not implemented yet")]
    NotImplemented { op: &'static str, proto: &'static str, source_ref: &'static str },
    #[error("malformed suite specification '{0}': {1}")]
    Syntax(String, String),
    /// A combination of protocols that cannot run together (named by the protocol that refuses).
    #[error("{0}")]
    Unsupported(String),
}

/// One protocol choice of one operator: a registry handle ([`Chosen`], e.g. [`Gelu`]) or the
/// activation ring ([`ActRing`]).
pub trait Choice: Copy + Eq + fmt::Debug + Sized + 'static {
    /// The operator's key in `--op` and in JSON (`"gelu"`).
    const OPERATOR: &'static str;
    /// Every choice, in the order `nectar suites` lists them.
    fn all() -> Vec<Self>;
    /// The protocol's name in the grammar (`"seg4"`).
    fn name(self) -> &'static str;
    /// Where it is specified.
    fn source(self) -> &'static str;
    /// Whether it runs today.
    fn implemented(self) -> bool {
        true
    }
    /// Its AGREEMENT parameters (enter the digest): the registry's serialized parameters, or
    /// the ring's documented constants.
    fn params(self) -> String;
    /// Its rows in `nectar params` (HE sets, statistically hiding steps) when it runs.
    fn security(self) -> Result<Security, String> {
        Ok(Security::default())
    }
    /// The choice named `s`.
    fn from_name(s: &str) -> Result<Self, SuiteError> {
        Self::all().into_iter().find(|c| c.name() == s).ok_or_else(|| SuiteError::UnknownProtocol {
            op: Self::OPERATOR,
            proto: s.to_string(),
            choices: Self::all().iter().map(|c| c.name()).collect::<Vec<_>>().join(", "),
        })
    }
}

/// A registered kind's choice: its list is the kind's (`nectar_math::registry`), its parameters
/// the protocol's serialized AGREEMENT data.
impl<K: Kind> Choice for Chosen<K> {
    const OPERATOR: &'static str = K::OPERATOR;
    fn all() -> Vec<Self> {
        Chosen::all().collect()
    }
    fn name(self) -> &'static str {
        Chosen::name(self)
    }
    fn source(self) -> &'static str {
        self.get().source()
    }
    fn params(self) -> String {
        self.params_text()
    }
    fn security(self) -> Result<Security, String> {
        self.get().security()
    }
}

/// `olt-ring` of a suite written before the field existed: `full`, what it ran.
const fn full_olt_ring() -> OltRing {
    OltRing::new(&nectar_linear::olt_ring::full::Full)
}

/// The protocol of every operator of a private inference (see the module docs). All fields
/// are AGREEMENT: both parties must resolve the same suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Suite {
    pub ot: OtExt,
    pub matmul: Matmul,
    pub olt_cost: OltCost,
    /// Absent in suites written before it existed: `full`, what they ran.
    #[serde(default = "full_olt_ring")]
    pub olt_ring: OltRing,
    pub matmul_shared: SharedMatmul,
    pub mul: Mul,
    pub compare: Compare,
    pub gelu: Gelu,
    pub silu: Silu,
    pub exp: Exp,
    pub reciprocal: Reciprocal,
    pub rsqrt: Rsqrt,
    pub norm: Norm,
    pub softmax: Softmax,
    pub ffn: Ffn,
    pub act_ring: ActRing,
    pub embed: Embed,
}

/// One operator's resolved choice, for listings and comparisons.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub operator: &'static str,
    pub protocol: &'static str,
    pub source: &'static str,
    pub implemented: bool,
    pub params: String,
}

fn entry<C: Choice>(c: C) -> Entry {
    Entry {
        operator: C::OPERATOR,
        protocol: c.name(),
        source: c.source(),
        implemented: c.implemented(),
        params: c.params(),
    }
}

/// Every choice of one operator (for `nectar suites`).
#[derive(Clone, Debug)]
pub struct OperatorChoices {
    pub operator: &'static str,
    /// `(name, source, implemented)`.
    pub choices: Vec<(&'static str, &'static str, bool)>,
}

fn choices<C: Choice>() -> OperatorChoices {
    OperatorChoices {
        operator: C::OPERATOR,
        choices: C::all().into_iter().map(|c| (c.name(), c.source(), c.implemented())).collect(),
    }
}

/// Something done once per operator of a suite ([`Suite::visit`]).
pub trait Visit {
    fn choice<C: Choice>(&mut self, c: C);
}

/// The named presets with one line each on what they are.
pub const PRESETS: [(&str, &str); 7] = [
    (
        "nectar",
        "the default: BumbleBee's protocols with nectar's GeLU (sq8), exp (taylor4), LayerNorm (outer), softmax (coarse), one-step reciprocal and rsqrt from eighth-octave guesses (newton1), OLTs mod 2^51 (a decoding step's prepared a step ahead), bOLEe products queried half by each party and the attention's two OLTs in the same flights (bole-duplex, olt-duplex), Nimbus's COP embedding lookup and fitted SiLU",
    ),
    ("bumblebee", "BumbleBee (NDSS'25): OLT matmuls, bOLEe products, OT nonlinear protocols"),
    ("rotl", "BumbleBee linear layers + ROTL comparison from LUTs and LUT GeLU/exp/reciprocal/softmax"),
    ("east", "BumbleBee linear layers + East OPPE GeLU/exp/SiLU/tanh, the Determine reciprocal and rsqrt, LayerNorm by Eq. (9)"),
    ("blb", "BLB: CKKS-fused linear operators with BOLT's P4 GeLU and BumbleBee's other nonlinear protocols between them"),
    ("leaf", "BumbleBee + LEAF's non-interactive FHE feed-forward block"),
    ("nimbus", "Nimbus (NeurIPS'24): COP matmuls and embedding on weights encrypted once, distribution-fitted GeLU / SiLU / exp, over the nectar default"),
];

impl Default for Suite {
    fn default() -> Self {
        Suite::nectar()
    }
}

impl Suite {
    /// The default suite (issue 17): BumbleBee's protocols — OLT matmuls, bOLEe products, the
    /// OT millionaire, Newton reciprocal and rsqrt — with three approximations of ours chosen
    /// by `nectar accuracy`'s per-operator error table: GeLU `sq8` (degree 8 in |x| from three
    /// squarings, in `Z_{2^45}`, its two branch comparisons in `Z_{2^34}`; 1.8e−4 max error vs
    /// Seg4's 3.3e−2), exp `taylor4` (fourth-order base,
    /// 7.5e−5 vs 4.3e−3) and LayerNorm `outer` (`r ⊗ γ` by one OLT instead of a second
    /// product); and softmax
    /// `coarse` (the composition in `Z_{2^45}` with 2-prime bOLEe products, its row max and exp
    /// clip compared in `Z_{2^34}` on a `2^−4` grid: 75 COTs per element instead of `narrow`'s
    /// 144). The OLT windows are priced by `olt-cost = balanced` (the
    /// artifact's fewest-bytes choice, except where one more MB saves at least 0.1 s). COTs
    /// come from Ferret `ferret-b11-ht` (emp-ot's b11 set with Guo et al.'s half-tree SPCOT:
    /// 20 % less time per COT than b13 for 0.26 more bits, `docs/results/ot.md`; MiniLM 32 tokens
    /// 0.3 s less for 0.33 MB more). The OLTs compute mod `2^51` (`olt-ring = narrow`: every
    /// HE prime below `2^50`, where the NTT is 2.3× faster; MiniLM 32 tokens 16.5 s against
    /// 19.1 s, the same output). The token-embedding lookup runs on Nimbus's client-side outer
    /// product (`embed = nimbus-cop`, issue 47): the table travels once (cached by `nectar
    /// infer` / `chat`), then each lookup is one flight in which the client skips the all-zero
    /// blocks of its one-hot rows — exact, and faster online on every model measured (MiniLM
    /// 32 tokens 7.5 s against 8.6 s; SmolLM2 5 + 2 tokens 32.6 s against 34.6 s) for a first
    /// contact of 220 MB / 2.0 s (MiniLM) or 531 MB / 4.8 s (SmolLM2), reported as
    /// preprocessing. SiLU (LLaMA) is Nimbus's distribution-fitted `|x|` quartic (`silu =
    /// nimbus`, issue 47): 3× faster and 2.4× fewer bytes than Seg4 at 393 216 inputs, worst
    /// case 3.4e−2 against Seg4's 7.5e−2; SmolLM2's private greedy tokens equal the plaintext's
    /// on 4 of 5 prompts × 16 tokens (Seg4: 3), at 11.9–13.3 s per token against 17.8–20.3
    /// (`docs/results/nimbus.md`). The reciprocal and the rsqrt are BumbleBee's Newton from a
    /// linear guess on eighth-octave buckets found by the same one comparison call
    /// (`reciprocal = newton1`, `rsqrt = newton1`, issues 48/49): one step, three product layers
    /// (`newton2`'s half-octave normalisation took five and six, BumbleBee's eight and eight);
    /// MiniLM 32 tokens 912 flights against 1052, 67.5 s against 73.2 s at `blb-wan3`, on the
    /// LAN 10.2 s against 9.8 s (runs overlapping; +4 % to −1 % over two sittings), 1 % more
    /// bytes (the comparisons, in the narrowest ring that holds the domain); SmolLM2 6.82 s per
    /// token against 7.19 (`docs/results/wan.md`, `docs/results/llm.md`). The
    /// element-wise products of two bOLEe chunks or more run duplex (`mul = bole-duplex`,
    /// issues 48/52: each party queries half the chunks under its own key and answers the other
    /// half, both halves crossing the link in the same flights; the same bytes, half of them
    /// each way at once, for one more one-way latency per split product), and the attention's
    /// two cross-term OLTs run in the same two flights (`matmul-shared = olt-duplex`). A decoding
    /// step's weight products are the OLT's prepared one step ahead (`matmul = olt-ahead`,
    /// issue 49: the client's query of a fresh random row and the server's evaluation run while
    /// the step before runs, the product is then one exchange; SmolLM2 7.23 s per token against
    /// 8.47 with `olt`, the same tokens, `docs/results/llm.md`); every other product, and every
    /// product of an encoder, is the plain OLT's.
    pub const fn nectar() -> Self {
        Suite {
            matmul: Matmul::new(&nectar_linear::layer::olt_ahead::OltAhead),
            mul: Mul::new(&nectar_nn::mul::bole_duplex::BoleDuplex),
            matmul_shared: SharedMatmul::new(&nectar_linear::attention::olt_duplex::OltDuplex),
            embed: Embed::new(&nectar_nn::embed::nimbus_cop::NimbusCopEmbed),
            silu: Silu::new(&nectar_nn::silu::nimbus::Nimbus),
            ot: OtExt::new(&nectar_nn::ot_ext::ferret::B11_HALF_TREE),
            gelu: Gelu::new(&nectar_nn::gelu::sq8::Sq8),
            exp: Exp::new(&nectar_nn::exp::taylor4::Taylor4),
            norm: Norm::new(&nectar_nn::norm::outer::Outer),
            softmax: Softmax::new(&nectar_nn::softmax::coarse::Coarse),
            reciprocal: Reciprocal::new(&nectar_nn::reciprocal::newton1::Newton1),
            rsqrt: Rsqrt::new(&nectar_nn::rsqrt::newton1::Newton1),
            olt_cost: OltCost::new(&nectar_linear::olt_cost::balanced::Balanced),
            olt_ring: OltRing::new(&nectar_linear::olt_ring::narrow::Narrow),
            ..Suite::bumblebee()
        }
    }

    /// BumbleBee's protocols and approximations as in the paper.
    pub const fn bumblebee() -> Self {
        Suite {
            ot: OtExt::new(&nectar_nn::ot_ext::ferret::B13),
            matmul: Matmul::new(&nectar_linear::layer::olt::Olt),
            olt_cost: OltCost::new(&nectar_linear::olt_cost::artifact::Artifact),
            olt_ring: full_olt_ring(),
            matmul_shared: SharedMatmul::new(&nectar_linear::attention::olt::Olt),
            mul: Mul::new(&nectar_nn::mul::bole::Bole),
            compare: Compare::new(&nectar_nn::compare::millionaire::Millionaire),
            gelu: Gelu::new(&nectar_nn::gelu::seg4::Seg4),
            silu: Silu::new(&nectar_nn::silu::seg4::Seg4),
            exp: Exp::new(&nectar_nn::exp::taylor::Taylor),
            reciprocal: Reciprocal::new(&nectar_nn::reciprocal::newton::Newton),
            rsqrt: Rsqrt::new(&nectar_nn::rsqrt::newton::Newton),
            norm: Norm::new(&nectar_nn::norm::bumblebee::Bumblebee),
            softmax: Softmax::new(&nectar_nn::softmax::bumblebee::Bumblebee),
            ffn: Ffn::new(&nectar_nn::ffn::mpc::Mpc),
            act_ring: ActRing::Full,
            embed: Embed::new(&nectar_nn::embed::client_onehot::ClientOneHot),
        }
    }

    /// The preset `name` (see [`PRESETS`]); not validated (a preset may name planned protocols).
    pub fn preset(name: &str) -> Result<Self, SuiteError> {
        let b = Suite::bumblebee();
        Ok(match name {
            "nectar" => Suite::nectar(),
            "bumblebee" => b,
            "rotl" => Suite {
                compare: Compare::new(&nectar_nn::compare::rotl_lut::RotlLut),
                gelu: Gelu::new(&nectar_nn::gelu::lut::Lut),
                silu: Silu::new(&nectar_nn::silu::lut::Lut),
                exp: Exp::new(&nectar_nn::exp::lut::Lut),
                reciprocal: Reciprocal::new(&nectar_nn::reciprocal::lut::Lut),
                softmax: Softmax::new(&nectar_nn::softmax::lut::Lut),
                ..b
            },
            // East §4.2: LayerNorm by Eq. (9) with the Determine rsqrt (on a documented variance
            // range, `nectar_nn::layernorm::EAST_NORM_DEFAULT`).
            "east" => Suite {
                gelu: Gelu::new(&nectar_nn::gelu::oppe::Oppe),
                silu: Silu::new(&nectar_nn::silu::oppe::Oppe),
                exp: Exp::new(&nectar_nn::exp::oppe::Oppe),
                reciprocal: Reciprocal::new(&nectar_nn::reciprocal::determine::NewtonDetermine),
                rsqrt: Rsqrt::new(&nectar_nn::rsqrt::determine::NewtonDetermine),
                norm: Norm::new(&nectar_nn::norm::east_eq9::EastEq9),
                ..b
            },
            // What BLB's fused graph runs (see `Suite::check_blb`): BOLT's P4 GeLU.
            "blb" => Suite {
                matmul: Matmul::new(&nectar_linear::layer::blb_fused::BlbFused),
                matmul_shared: SharedMatmul::new(&nectar_linear::attention::ckks::Ckks),
                gelu: Gelu::new(&nectar_nn::gelu::p4::P4),
                ..b
            },
            "leaf" => Suite { ffn: Ffn::new(&nectar_nn::ffn::leaf::Leaf), ..b },
            // Nimbus §3.2 (COP, `docs/notes/nimbus.md` §8) and §4 (the fitted approximations)
            // over the default's other choices (Nimbus runs on BumbleBee's backend).
            "nimbus" => Suite {
                matmul: Matmul::new(&nectar_linear::layer::nimbus_cop::NimbusCop),
                embed: Embed::new(&nectar_nn::embed::nimbus_cop::NimbusCopEmbed),
                gelu: Gelu::new(&nectar_nn::gelu::nimbus::Nimbus),
                silu: Silu::new(&nectar_nn::silu::nimbus::Nimbus),
                exp: Exp::new(&nectar_nn::exp::nimbus::Nimbus),
                ..Suite::nectar()
            },
            other => return Err(SuiteError::UnknownPreset(other.to_string())),
        })
    }

    /// Sets operator `op` to protocol `proto` (the one grammar of protocol names).
    pub fn set(&mut self, op: &str, proto: &str) -> Result<(), SuiteError> {
        fn p<C: Choice>(slot: &mut C, proto: &str) -> Result<(), SuiteError> {
            *slot = C::from_name(proto)?;
            Ok(())
        }
        match op {
            "ot" => p(&mut self.ot, proto),
            "matmul" => p(&mut self.matmul, proto),
            "olt-cost" => p(&mut self.olt_cost, proto),
            "olt-ring" => p(&mut self.olt_ring, proto),
            "matmul-shared" => p(&mut self.matmul_shared, proto),
            "mul" => p(&mut self.mul, proto),
            "compare" => p(&mut self.compare, proto),
            "gelu" => p(&mut self.gelu, proto),
            "silu" => p(&mut self.silu, proto),
            "exp" => p(&mut self.exp, proto),
            "reciprocal" => p(&mut self.reciprocal, proto),
            "rsqrt" => p(&mut self.rsqrt, proto),
            "norm" => p(&mut self.norm, proto),
            "softmax" => p(&mut self.softmax, proto),
            "ffn" => p(&mut self.ffn, proto),
            "act-ring" => p(&mut self.act_ring, proto),
            "embed" => p(&mut self.embed, proto),
            other => Err(SuiteError::UnknownOperator(
                other.to_string(),
                Suite::operators().join(", "),
            )),
        }
    }

    /// Operator keys, in listing order.
    pub fn operators() -> Vec<&'static str> {
        Suite::bumblebee().entries().iter().map(|e| e.operator).collect()
    }

    /// Applies `OP=PROTO` overrides separated by `,` or `+`.
    pub fn apply_overrides(&mut self, spec: &str) -> Result<(), SuiteError> {
        for item in spec.split([',', '+']).map(str::trim).filter(|s| !s.is_empty()) {
            let Some((op, proto)) = item.split_once('=') else {
                return Err(SuiteError::Syntax(
                    spec.to_string(),
                    format!("'{item}' is not OP=PROTO"),
                ));
            };
            self.set(op.trim(), proto.trim())?;
        }
        Ok(())
    }

    /// `PRESET[+OP=PROTO]...` (e.g. `bumblebee+gelu=p4`). Not validated.
    pub fn parse(spec: &str) -> Result<Self, SuiteError> {
        let spec = spec.trim();
        let (preset, rest) = spec.split_once('+').unwrap_or((spec, ""));
        if preset.contains('=') {
            return Err(SuiteError::Syntax(
                spec.to_string(),
                "it must start with a preset name (nectar, bumblebee, rotl, east, blb, leaf, nimbus)".into(),
            ));
        }
        let mut s = Suite::preset(preset.trim())?;
        s.apply_overrides(rest)?;
        Ok(s)
    }

    /// A TOML suite file: `preset = "NAME"` (default `bumblebee`) and an `[ops]` table of
    /// `operator = "protocol"`. Not validated.
    pub fn from_toml(text: &str) -> Result<Self, SuiteError> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            preset: Option<String>,
            #[serde(default)]
            ops: std::collections::BTreeMap<String, String>,
        }
        let f: File =
            toml::from_str(text).map_err(|e| SuiteError::Syntax("suite file".into(), e.to_string()))?;
        let mut s = Suite::preset(f.preset.as_deref().unwrap_or("bumblebee"))?;
        for (op, proto) in &f.ops {
            s.set(op, proto)?;
        }
        Ok(s)
    }

    /// The session backend's options: format `(64, 18)`, then the suite's `ot`, `mul` and
    /// `compare` configure the COT producer, the products and the comparisons
    /// (`nectar_nn::ot_ext`, `nectar_nn::mul`, `nectar_nn::compare`).
    pub fn backend_opts(&self) -> nectar_nn::secure::SecureOpts {
        let opts = self.ot.configure(nectar_nn::secure::SecureOpts::bumblebee());
        self.compare.configure(self.mul.configure(opts))
    }

    /// Calls `v` with every operator's choice, in listing order: the one list of the suite's
    /// fields every listing below goes through.
    pub fn visit(&self, v: &mut impl Visit) {
        v.choice(self.ot);
        v.choice(self.matmul);
        v.choice(self.olt_cost);
        v.choice(self.olt_ring);
        v.choice(self.matmul_shared);
        v.choice(self.mul);
        v.choice(self.compare);
        v.choice(self.gelu);
        v.choice(self.silu);
        v.choice(self.exp);
        v.choice(self.reciprocal);
        v.choice(self.rsqrt);
        v.choice(self.norm);
        v.choice(self.softmax);
        v.choice(self.ffn);
        v.choice(self.act_ring);
        v.choice(self.embed);
    }

    /// Every operator's choice, in listing order.
    pub fn entries(&self) -> Vec<Entry> {
        struct Entries(Vec<Entry>);
        impl Visit for Entries {
            fn choice<C: Choice>(&mut self, c: C) {
                self.0.push(entry(c));
            }
        }
        let mut v = Entries(Vec::new());
        self.visit(&mut v);
        v.0
    }

    /// Every operator with all its choices (for `nectar suites`).
    pub fn catalogue() -> Vec<OperatorChoices> {
        struct Catalogue(Vec<OperatorChoices>);
        impl Visit for Catalogue {
            fn choice<C: Choice>(&mut self, _: C) {
                self.0.push(choices::<C>());
            }
        }
        let mut v = Catalogue(Vec::new());
        Suite::bumblebee().visit(&mut v);
        v.0
    }

    /// Fails on the first operator whose protocol is not implemented yet (run it before any
    /// key is generated).
    pub fn validate(&self) -> Result<(), SuiteError> {
        if let Some(e) = self.entries().into_iter().find(|e| !e.implemented) {
            return Err(SuiteError::NotImplemented { op: e.operator, proto: e.protocol, source_ref: e.source });
        }
        // The layers' matmul names the attention products it runs with (BLB's blocks evaluate
        // `Q·K^T` and `P·V` under CKKS themselves, BLB §5.1).
        self.matmul
            .check(self.matmul_shared)
            .map_err(|why| SuiteError::Syntax(format!("matmul={}", self.matmul.name()), why))?;
        match self.matmul.fused() {
            true => self.check_blb(),
            false => self.check_rings(),
        }
    }

    /// Every activation protocol runs in the suite's activation ring, or the suite is refused
    /// naming it (e.g. `gelu=sq8` and `act-ring=mixed`).
    fn check_rings(&self) -> Result<(), SuiteError> {
        self.gelu.supports(self.act_ring).map_err(SuiteError::Unsupported)?;
        self.silu.supports(self.act_ring).map_err(SuiteError::Unsupported)?;
        // The softmax composes the suite's exponential and reciprocal (`softmax = narrow |
        // coarse` run the exponential in their narrower ring).
        self.softmax.check(self.exp, self.reciprocal).map_err(SuiteError::Unsupported)?;
        // The norm runs the suite's rsqrt on its range (checked for BERT-base's rows and ε; the
        // first norm of a run checks its own and fails with the same message).
        let fp = nectar_math::FixedPoint::BUMBLEBEE;
        self.norm.check(self.rsqrt, nectar_nn::norm::CHECK_COLS, 1e-5, fp).map_err(|e| {
            SuiteError::Unsupported(format!("norm={} with rsqrt={}: {e}", self.norm.name(), self.rsqrt.name()))
        })?;
        Ok(())
    }

    /// BLB's FineGrainFusion blocks (`matmul = blb-fused`) evaluate the nonlinear operators'
    /// polynomial parts inside their CKKS blocks and only the comparisons, muxes, reciprocal
    /// and rsqrt between them (BLB §4, App. B; `nectar_blb::graph`): GeLU is BOLT's P4 split
    /// by sign (Alg. 4), SiLU BumbleBee's Seg4 segments, exp `(1 + x/64)^64` (BumbleBee's
    /// Taylor form, clipped at BLB's `T_exp`), the reciprocal BumbleBee's Newton, the
    /// norms and softmax BumbleBee's compositions, all in the rings BLB's conversions fix. A
    /// suite naming another protocol for one of them is refused here, in one line naming it,
    /// instead of being ignored. The rsqrt between the blocks is the suite's (refused here if it
    /// cannot serve the LayerNorm's variances).
    fn check_blb(&self) -> Result<(), SuiteError> {
        let runs = Suite::preset("blb")?;
        // The rsqrt between the blocks is the suite's, on the LayerNorm's variances.
        let fp = nectar_math::FixedPoint::BUMBLEBEE;
        self.rsqrt
            .check(&nectar_nn::norm::variance_range(1e-5, fp), fp)
            .map_err(|e| SuiteError::Unsupported(format!("matmul=blb-fused with rsqrt={}: {e}", self.rsqrt.name())))?;
        let fixed = ["gelu", "silu", "exp", "reciprocal", "norm", "softmax", "act-ring", "ffn"];
        let ours = self.entries();
        let differs: Vec<String> = runs
            .entries()
            .into_iter()
            .zip(&ours)
            .filter(|(b, o)| fixed.contains(&b.operator) && b.protocol != o.protocol)
            .map(|(b, o)| format!("{}={} (it runs {})", o.operator, o.protocol, b.protocol))
            .collect();
        if differs.is_empty() {
            return Ok(());
        }
        Err(SuiteError::Unsupported(format!(
            "matmul=blb-fused evaluates the nonlinear operators inside and between its fused CKKS blocks with fixed protocols (BLB §4, App. B): {} cannot run there",
            differs.join(", ")
        )))
    }

    /// SHA-256 (hex) of every operator's protocol and AGREEMENT parameters and the
    /// fixed-point format: what the session handshake compares.
    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        let fp = nectar_math::FixedPoint::BUMBLEBEE;
        h.update(format!("format=({},{})\n", fp.l(), fp.f()));
        for e in self.entries() {
            h.update(format!("{}={}[{}]\n", e.operator, e.protocol, e.params));
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The first operator whose protocol differs, as `op: client X, server Y` (`self` is the
    /// server's suite).
    pub fn mismatch(&self, client: &Suite) -> Option<String> {
        self.entries()
            .into_iter()
            .zip(client.entries())
            .find(|(s, c)| s.protocol != c.protocol)
            .map(|(s, c)| format!("{}: client {}, server {}", s.operator, c.protocol, s.protocol))
    }

    /// A short name: the closest preset (a runnable one for a runnable suite) and the operators
    /// that differ from it, e.g. `bumblebee+gelu=p4`.
    pub fn label(&self) -> String {
        let mut best: Option<(usize, String)> = None;
        // A suite that runs is named from a preset that runs (`bumblebee+matmul=ckks`, not
        // `bumblebee+...`, not a preset naming a planned protocol); a planned one from any preset.
        let runs = self.validate().is_ok();
        for (name, _) in PRESETS {
            let Ok(p) = Suite::preset(name) else { continue };
            if runs && p.validate().is_err() {
                continue;
            }
            // `blb` is its fusion: a suite without it is not named `blb+...`.
            if p.matmul.fused() && !self.matmul.fused() {
                continue;
            }
            let diffs: Vec<String> = p
                .entries()
                .into_iter()
                .zip(self.entries())
                .filter(|(a, b)| a.protocol != b.protocol)
                .map(|(_, b)| format!("{}={}", b.operator, b.protocol))
                .collect();
            if best.as_ref().is_none_or(|(n, _)| diffs.len() < *n) {
                let mut s = name.to_string();
                for d in &diffs {
                    s.push('+');
                    s.push_str(d);
                }
                best = Some((diffs.len(), s));
            }
        }
        best.map(|b| b.1).unwrap_or_default()
    }

    /// `{"ot": "ferret", "gelu": "seg4", ...}` for bench lines and `--json` outputs.
    pub fn json_map(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for e in self.entries() {
            m.insert(e.operator.to_string(), serde_json::Value::from(e.protocol));
        }
        serde_json::Value::Object(m)
    }

    /// The protocol that ran for a profile row (`gelu`, `linear.qkv`, `matmul.qk`, ...).
    pub fn protocol_for(&self, op: &str) -> &'static str {
        let head = op.split('.').next().unwrap_or(op);
        match head {
            // Heads and embeddings are OLT under every `matmul` (BLB's CKKS covers the
            // transformer layers, `nectar_linear::ckks_linear`).
            "embed" => self.embed.runs(),
            "lm_head" | "classifier" => nectar_linear::layer::olt::Olt.name(),
            "linear" => self.matmul.name(),
            "matmul" => self.matmul_shared.name(),
            "mul" => self.mul.name(),
            "gelu" => self.gelu.name(),
            "silu" => self.silu.name(),
            "exp" | "elu" | "tanh" => self.exp.name(),
            "reciprocal" => self.reciprocal.name(),
            "rsqrt" => self.rsqrt.name(),
            "onehot" => "i_equal",
            "softmax" => self.softmax.name(),
            "layernorm" | "rmsnorm" => self.norm.name(),
            "argmax" => self.compare.name(),
            "ffn" | "leaf" => self.ffn.name(),
            "rope" | "pool" => "local",
            // BLB's fused blocks (conversions + CKKS) and the MPC operators between them.
            "blb" => self.matmul.name(),
            // The steps between BLB's fused blocks (`blb-mpc.gelu.cmp`, `blb-mpc.softmax.rec`,
            // `blb-mpc.ln1.rsqrt`, ...): the protocol of the operator they belong to.
            "blb-mpc" => {
                let mut parts = op.split('.').skip(1);
                match (parts.next().unwrap_or(""), parts.next().unwrap_or("")) {
                    ("gelu", _) => self.gelu.name(),
                    ("silu", _) => self.silu.name(),
                    (_, k) if k.starts_with("rec") => self.reciprocal.name(),
                    (_, k) if k.starts_with("rsqrt") => self.rsqrt.name(),
                    ("softmax", k) if k.starts_with("max") || k.starts_with("cmp") => self.compare.name(),
                    ("softmax", _) => self.softmax.name(),
                    _ => self.compare.name(),
                }
            }
            "output" => "reveal",
            _ => "",
        }
    }
}

impl fmt::Display for Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_the_grammar() {
        assert_eq!(Suite::parse("bumblebee").unwrap(), Suite::bumblebee());
        let p4 = Suite::parse("bumblebee+gelu=p4").unwrap();
        assert_eq!(p4.gelu.name(), "p4");
        assert_eq!(p4.label(), "bumblebee+gelu=p4");
        let ckks = Suite::parse("bumblebee+matmul=ckks+matmul-shared=ckks").unwrap();
        assert_eq!(ckks.label(), "bumblebee+matmul=ckks+matmul-shared=ckks", "named from a runnable preset");
        let mut s = Suite::bumblebee();
        s.apply_overrides("gelu=p4, mul=ot").unwrap();
        assert_eq!((s.gelu.name(), s.mul.name()), ("p4", "ot"));
        assert_eq!(Suite::parse(&s.label()).unwrap(), s);
        for (name, _) in PRESETS {
            let p = Suite::preset(name).unwrap();
            assert_eq!(p.label(), name, "a preset is its own label");
        }
        assert!(matches!(Suite::parse("nope"), Err(SuiteError::UnknownPreset(_))));
        assert!(matches!(Suite::parse("bumblebee+gelu=xyz"), Err(SuiteError::UnknownProtocol { op: "gelu", .. })));
        assert!(matches!(Suite::parse("bumblebee+foo=bar"), Err(SuiteError::UnknownOperator(..))));
        assert!(matches!(Suite::parse("bumblebee+gelu"), Err(SuiteError::Syntax(..))));
        assert!(matches!(Suite::parse("gelu=p4"), Err(SuiteError::Syntax(..))));
    }

    #[test]
    fn toml_files() {
        let s = Suite::from_toml("preset = \"bumblebee\"\n[ops]\ngelu = \"p4\"\nact-ring = \"mixed\"\n").unwrap();
        assert_eq!((s.gelu.name(), s.act_ring), ("p4", ActRing::Mixed));
        assert_eq!(Suite::from_toml("").unwrap(), Suite::bumblebee());
        assert!(Suite::from_toml("preset = \"bumblebee\"\nfoo = 1\n").is_err());
        assert!(Suite::from_toml("[ops]\ngelu = \"nope\"\n").is_err());
    }

    #[test]
    fn planned_protocols_are_refused_by_name() {
        assert_eq!(Suite::bumblebee().validate(), Ok(()));
        assert_eq!(Suite::parse("bumblebee+gelu=p4").unwrap().validate(), Ok(()));
        assert_eq!(Suite::preset("east").unwrap().validate(), Ok(()));
        assert_eq!(Suite::preset("rotl").unwrap().validate(), Ok(()));
        assert_eq!(Suite::parse("bumblebee+gelu=lut").unwrap().validate(), Ok(()));
        assert_eq!(Suite::preset("leaf").unwrap().validate(), Ok(()));
        assert_eq!(Suite::parse("bumblebee+ffn=leaf").unwrap().validate(), Ok(()));
        assert_eq!(Suite::preset("blb").unwrap().validate(), Ok(()));
        assert_eq!(Suite::parse("bumblebee+matmul=blb-fused+matmul-shared=ckks+gelu=p4").unwrap().validate(), Ok(()));
        // BLB's fused graph runs its own nonlinear protocols: another choice is refused by name.
        let e = Suite::parse("blb+gelu=sq8").unwrap().validate().unwrap_err();
        assert!(e.to_string().contains("gelu=sq8 (it runs p4)"), "{e}");
        let e = Suite::parse("blb+exp=taylor4+act-ring=mixed").unwrap().validate().unwrap_err();
        assert!(e.to_string().contains("exp=taylor4 (it runs taylor), act-ring=mixed (it runs full)"), "{e}");
        assert_eq!(Suite::preset("blb").unwrap().gelu.name(), "p4", "the preset names what it runs");
        let s = Suite::preset("blb").unwrap();
        assert_eq!(s.protocol_for("blb-mpc.gelu.cmp"), "p4");
        assert_eq!(s.protocol_for("blb-mpc.softmax.rec"), "newton");
        assert_eq!(s.protocol_for("blb-mpc.ln1.rsqrt"), "newton");
        assert_eq!(s.protocol_for("blb-mpc.softmax.max"), "millionaire");
        // The fused blocks do the attention products themselves.
        let e = Suite::parse("bumblebee+matmul=blb-fused").unwrap().validate().unwrap_err();
        assert!(e.to_string().contains("matmul-shared must be ckks"), "{e}");
    }

    #[test]
    fn digest_and_mismatch_name_the_operator() {
        let a = Suite::bumblebee();
        let b = Suite::parse("bumblebee+gelu=p4").unwrap();
        assert_eq!(a.digest(), Suite::bumblebee().digest());
        assert_ne!(a.digest(), b.digest());
        assert_eq!(a.digest().len(), 64);
        assert_eq!(a.mismatch(&a), None);
        assert_eq!(a.mismatch(&b).unwrap(), "gelu: client p4, server seg4");
        let json = serde_json::to_string(&b).unwrap();
        assert!(json.contains("\"gelu\":\"p4\""), "{json}");
        assert_eq!(serde_json::from_str::<Suite>(&json).unwrap(), b);
        assert_eq!(b.json_map()["gelu"], "p4");
        assert_eq!(b.protocol_for("gelu"), "p4");
        assert_eq!(b.protocol_for("linear.qkv"), "olt");
        // The OLT ring: the default's is narrow, a suite written before the field existed
        // reads as full, and the two differ in the digest (their HE parameters differ).
        assert_eq!(Suite::nectar().olt_ring.name(), "narrow");
        let old = json.replace(",\"olt-ring\":\"full\"", "");
        assert!(!old.contains("olt-ring"), "{old}");
        assert_eq!(serde_json::from_str::<Suite>(&old).unwrap(), b);
        let narrow = Suite::parse("bumblebee+olt-ring=narrow").unwrap();
        assert_ne!(narrow.digest(), a.digest());
        assert_eq!(a.mismatch(&narrow).unwrap(), "olt-ring: client narrow, server full");
        let ring = |n: &str| OltRing::from_name(n).unwrap().he_params().fingerprint();
        assert_ne!(ring("narrow"), ring("full"));
    }

    #[test]
    fn catalogue_lists_every_operator() {
        let cat = Suite::catalogue();
        assert_eq!(
            cat.iter().map(|c| c.operator).collect::<Vec<_>>(),
            Suite::operators()
        );
        let gelu = cat.iter().find(|c| c.operator == "gelu").unwrap();
        let names: Vec<_> = gelu.choices.iter().map(|c| (c.0, c.2)).collect();
        let listed: Vec<_> = nectar_nn::gelu::ALL.iter().map(|p| (p.name(), true)).collect();
        assert_eq!(names, listed, "the registry's list, in its order");
    }
}
