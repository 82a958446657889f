//! The vocabulary of nectar's protocol registry (DESIGN.md "Where a protocol plugs in"; issue 46).
//!
//! An **operator kind** (GeLU, SiLU, exp, ...) is a trait — written in the crate of its layer,
//! e.g. `nectar_nn::gelu::GeluProtocol` — with [`Protocol`] as its supertrait, plus one static
//! list of its protocols ([`Kind::list`]). A **protocol** is a unit struct in its own file that
//! implements the kind's trait. A suite holds one [`Chosen`] per kind: a handle into the list,
//! compared, printed and (de)serialized by the protocol's name, which the command line parses
//! once ([`Chosen::from_name`]). Everything that needs "every GeLU protocol" — the engine's
//! dispatch, `nectar suites`, the handshake digest, the benches, the accuracy table, the
//! generated twin-vs-protocol tests — iterates the list; nothing else names a protocol.
//!
//! The shape follows rustls' `CryptoProvider` (typed static descriptors in one list, chosen at
//! configuration time, agreed in the handshake), with names as the only strings, at the
//! command line's edge (STYLE.md "Registries").

use std::fmt;
use std::hash::{Hash, Hasher};

/// What every protocol of every kind states about itself.
pub trait Protocol: Sync + 'static {
    /// The name in the suite grammar (`"sq8"`): unique within its kind.
    fn name(&self) -> &'static str;
    /// Where it is specified (paper and section).
    fn source(&self) -> &'static str;
    /// Its AGREEMENT parameters (coefficients, segment bounds, rings, table contents) as typed
    /// data, serialized: both parties must run the same values, so the handshake digest hashes
    /// this serialization of every protocol that runs (never hand-written text).
    fn params(&self) -> serde_json::Value;
    /// What its security rests on when it runs — its HE parameter sets and its statistically
    /// hiding steps, the rows of `nectar params` (none by default: a protocol over the
    /// session's other protocols adds nothing of its own). An error says why it cannot be
    /// assessed (e.g. its parameters fail to build).
    fn security(&self) -> Result<Security, String> {
        Ok(Security::default())
    }
}

/// One HE parameter set a protocol runs (a row of `nectar params`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct HeRow {
    /// What it serves (`olt`, `bole`, `ckks-blb`, ...).
    pub role: &'static str,
    pub n: usize,
    /// `log2(q·P)` (ciphertext primes and special prime).
    pub log_qp: u32,
    /// The largest `log2(q·P)` with 128-bit security at this `N` (HE standard, ternary
    /// secret; 0: no entry).
    pub max_log_qp_128: u32,
    /// `log2 t` (largest CRT component); for CKKS, `log2 Δ` (the scale).
    pub log_t: u32,
    /// The RLWE error's σ = √(η/2).
    pub error_sigma: f64,
}

/// One statistically hiding step of a protocol (a row of `nectar params`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StatRow {
    /// The step, named the same by every protocol that takes it (rows are merged by it).
    pub step: &'static str,
    /// Statistical security over a whole session, in bits; `None`: perfectly hiding.
    pub session_bits: Option<u32>,
    pub detail: String,
}

/// A protocol's security rows ([`Protocol::security`]).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Security {
    pub he: Vec<HeRow>,
    pub statistical: Vec<StatRow>,
}

impl Security {
    /// Adds `other`'s rows that are not here yet: an HE set by role and ring degree, a step by
    /// name (two protocols over one key set or one conversion state the same row).
    pub fn merge(&mut self, other: Security) {
        for h in other.he {
            if !self.he.iter().any(|x| x.role == h.role && x.n == h.n && x.log_qp == h.log_qp) {
                self.he.push(h);
            }
        }
        for s in other.statistical {
            if !self.statistical.iter().any(|x| x.step == s.step) {
                self.statistical.push(s);
            }
        }
    }
}

/// One operator kind: its key in the grammar and its list of protocols.
pub trait Kind: 'static {
    /// The operator's key in `--op` and in JSON (`"gelu"`).
    const OPERATOR: &'static str;
    /// The kind's trait object (`dyn GeluProtocol`).
    type Dyn: ?Sized + Protocol;
    /// Every protocol of the kind, in the order listings show them.
    fn list() -> &'static [&'static Self::Dyn];
}

/// Declares an operator kind: `kind!(GeluKind, Gelu, "gelu", dyn GeluProtocol, ALL)` makes the
/// unit struct `GeluKind` implementing [`Kind`] over the static list `ALL` and the handle type
/// `Gelu = Chosen<GeluKind>` a suite holds.
#[macro_export]
macro_rules! kind {
    ($(#[$m:meta])* $kind:ident, $chosen:ident, $op:literal, $dyn:ty, $list:path) => {
        $(#[$m])*
        pub struct $kind;

        impl $crate::registry::Kind for $kind {
            const OPERATOR: &'static str = $op;
            type Dyn = $dyn;
            fn list() -> &'static [&'static $dyn] {
                $list
            }
        }

        /// The protocol a suite chose for this kind.
        pub type $chosen = $crate::registry::Chosen<$kind>;
    };
}

/// A name that is not in a kind's list.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("operator {op}: unknown protocol '{name}' (choices: {choices})")]
pub struct UnknownProtocol {
    pub op: &'static str,
    pub name: String,
    pub choices: String,
}

/// The protocol chosen for a kind `K`: a handle into `K`'s list (see the module docs).
pub struct Chosen<K: Kind>(&'static K::Dyn);

impl<K: Kind> Chosen<K> {
    /// The handle of protocol `p` (a `static` of `K`'s list, or a unit struct: `&Sq8`).
    pub const fn new(p: &'static K::Dyn) -> Self {
        Chosen(p)
    }

    /// The protocol named `name` in `K`'s list.
    pub fn from_name(name: &str) -> Result<Self, UnknownProtocol> {
        K::list().iter().find(|p| p.name() == name).map(|p| Chosen(*p)).ok_or_else(|| UnknownProtocol {
            op: K::OPERATOR,
            name: name.to_string(),
            choices: K::list().iter().map(|p| p.name()).collect::<Vec<_>>().join(", "),
        })
    }

    /// Every protocol of `K`, in listing order.
    pub fn all() -> impl Iterator<Item = Self> {
        K::list().iter().map(|p| Chosen(*p))
    }

    /// The protocol itself.
    pub fn get(self) -> &'static K::Dyn {
        self.0
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// Its serialized AGREEMENT parameters (what the digest hashes), as compact JSON.
    pub fn params_text(self) -> String {
        self.0.params().to_string()
    }
}

impl<K: Kind> Clone for Chosen<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K: Kind> Copy for Chosen<K> {}

/// Two handles are equal when they name the same protocol (names are unique per kind).
impl<K: Kind> PartialEq for Chosen<K> {
    fn eq(&self, other: &Self) -> bool {
        self.0.name() == other.0.name()
    }
}

impl<K: Kind> Eq for Chosen<K> {}

impl<K: Kind> Hash for Chosen<K> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.name().hash(h)
    }
}

impl<K: Kind> std::ops::Deref for Chosen<K> {
    type Target = K::Dyn;
    fn deref(&self) -> &K::Dyn {
        self.0
    }
}

impl<K: Kind> fmt::Debug for Chosen<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", K::OPERATOR, self.0.name())
    }
}

impl<K: Kind> fmt::Display for Chosen<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

impl<K: Kind> serde::Serialize for Chosen<K> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name())
    }
}

impl<'de, K: Kind> serde::Deserialize<'de> for Chosen<K> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Chosen::from_name(&s).map_err(serde::de::Error::custom)
    }
}

/// Checks a kind's list: non-empty, names unique and non-empty, parameters serializable to
/// JSON objects or null (each kind's tests call it).
pub fn check_list<K: Kind>() -> Result<(), String> {
    let list = K::list();
    if list.is_empty() {
        return Err(format!("{}: empty list", K::OPERATOR));
    }
    for (i, p) in list.iter().enumerate() {
        if p.name().is_empty() || p.name().contains(['=', '+', ',', ' ']) {
            return Err(format!("{}: protocol name '{}' is not a grammar token", K::OPERATOR, p.name()));
        }
        if list[..i].iter().any(|q| q.name() == p.name()) {
            return Err(format!("{}: protocol name '{}' listed twice", K::OPERATOR, p.name()));
        }
        if p.source().is_empty() {
            return Err(format!("{}={}: no source", K::OPERATOR, p.name()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub trait Shape: Protocol {
        fn sides(&self) -> u32;
    }
    struct Tri;
    struct Sq;
    impl Protocol for Tri {
        fn name(&self) -> &'static str {
            "tri"
        }
        fn source(&self) -> &'static str {
            "Euclid I.1"
        }
        fn params(&self) -> serde_json::Value {
            serde_json::json!({ "sides": 3 })
        }
    }
    impl Shape for Tri {
        fn sides(&self) -> u32 {
            3
        }
    }
    impl Protocol for Sq {
        fn name(&self) -> &'static str {
            "sq"
        }
        fn source(&self) -> &'static str {
            "Euclid I.46"
        }
        fn params(&self) -> serde_json::Value {
            serde_json::Value::Null
        }
    }
    impl Shape for Sq {
        fn sides(&self) -> u32 {
            4
        }
    }
    static SHAPES: &[&dyn Shape] = &[&Tri, &Sq];
    crate::kind!(ShapeKind, ShapeChoice, "shape", dyn Shape, SHAPES);

    #[test]
    fn handles_are_names() {
        const TRI: ShapeChoice = ShapeChoice::new(&Tri);
        let sq = ShapeChoice::from_name("sq").unwrap();
        assert_eq!(sq.sides(), 4);
        assert_eq!(TRI.sides(), 3);
        assert_ne!(sq, TRI);
        assert_eq!(TRI, ShapeChoice::from_name("tri").unwrap());
        assert_eq!(format!("{TRI} {TRI:?}"), "tri shape=tri");
        assert_eq!(TRI.params_text(), "{\"sides\":3}");
        let e = ShapeChoice::from_name("hex").unwrap_err();
        assert_eq!(e.to_string(), "operator shape: unknown protocol 'hex' (choices: tri, sq)");
        let json = serde_json::to_string(&sq).unwrap();
        assert_eq!(json, "\"sq\"");
        assert_eq!(serde_json::from_str::<ShapeChoice>(&json).unwrap(), sq);
        assert!(serde_json::from_str::<ShapeChoice>("\"hex\"").is_err());
        assert_eq!(ShapeChoice::all().map(|c| c.name()).collect::<Vec<_>>(), ["tri", "sq"]);
        check_list::<ShapeKind>().unwrap();
    }
}
