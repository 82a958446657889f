//! `ot = ferret*`: Ferret silent COT extension (CCS'20; BumbleBee §II-D) under emp-ot's LPN
//! parameter sets (REFERENCE.md §2.1, all 128-bit LPN security), with GGM-tree SPCOT or Guo et
//! al.'s half-tree SPCOT (EUROCRYPT'23 §4: `h` blocks per tree instead of `2h + 1`).

use super::OtExtProtocol;
use crate::secure::SecureOpts;
use nectar_math::registry::Protocol;
use nectar_ot::{FerretParams, Producer};

/// One Ferret parameter set as a protocol.
pub struct Ferret {
    name: &'static str,
    source: &'static str,
    params: FerretParams,
}

/// `ot = ferret`: emp-ot's b13 set (its default).
pub static B13: Ferret = Ferret { name: "ferret", source: "Ferret (CCS'20), b13 parameters", params: FerretParams::b13() };

/// `ot = ferret-b11`: emp-ot's b11 set — an LPN seed of 124 000 blocks (2 MB) that stays in
/// L2, against b13's 7.2 MB, for 3.3× the SPCOT traffic (1.44 bits per COT against 0.44).
/// `nectar bench ot`, 40 M COTs: 26 % less time; a GeLU 3 % less.
pub static B11: Ferret = Ferret { name: "ferret-b11", source: "Ferret (CCS'20), b11 parameters", params: FerretParams::b11() };

/// `ot = ferret-ht`: b13 with the half-tree SPCOT (0.21 bits per COT against 0.44).
pub static B13_HALF_TREE: Ferret = Ferret {
    name: "ferret-ht",
    source: "Ferret (CCS'20), b13 parameters, half-tree SPCOT (EUROCRYPT'23)",
    params: FerretParams::b13_half_tree(),
};

/// `ot = ferret-b11-ht`: b11's L2-resident LPN seed with the half-tree SPCOT (0.70 bits per COT
/// against 1.46 with GGM trees); the default suite's.
pub static B11_HALF_TREE: Ferret = Ferret {
    name: "ferret-b11-ht",
    source: "Ferret (CCS'20), b11 parameters, half-tree SPCOT (EUROCRYPT'23)",
    params: FerretParams::b11_half_tree(),
};

/// `ot = ferret-small`: the small set (same security, less memory per refill).
pub static SMALL: Ferret = Ferret { name: "ferret-small", source: "Ferret (CCS'20), small parameters", params: FerretParams::small() };

impl Protocol for Ferret {
    fn name(&self) -> &'static str {
        self.name
    }
    fn source(&self) -> &'static str {
        self.source
    }
    fn params(&self) -> serde_json::Value {
        serde_json::Value::from(format!("{:?}", self.params))
    }
}

impl OtExtProtocol for Ferret {
    fn configure(&self, opts: SecureOpts) -> SecureOpts {
        opts.with_producer(Producer::Ferret(self.params))
    }
}
