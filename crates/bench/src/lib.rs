//! `nectar-bench`: the measurement drivers behind `nectar bench ...` (the CLI in `nectar-app`
//! formats their results as bench lines). They live here so that the protocol crates stay free
//! of them: each driver uses only the public API of the layer it measures.
//!
//! - [`he`]: per-operation timings of the RLWE layer (`nectar bench he`);
//! - [`ot`]: COT throughput and communication of IKNP / Ferret (`nectar bench ot`);
//! - [`mpc`]: share-level protocols, less / mux / trunc / ... (`nectar bench nn --op less`);
//! - [`flute`]: FLUTE+ lookup tables on boolean inputs, preprocessing and online apart
//!   (`nectar bench mpc --op flute`);
//! - [`linear`]: the HE linear protocols, OLT / matmuls / bOLEe, BumbleBee Table II / VII
//!   (`nectar bench linear`);
//! - [`blb`]: BLB's CKKS ↔ MPC conversion at the Table 6 parameters
//!   (`nectar bench linear --suite blb --op convert`);
//! - [`fhe`]: LEAF's BFV products and functional-bootstrapping polynomial at N = 32768
//!   (`nectar bench fhe`);
//! - [`nn`]: whole nonlinear operators on the secure backend (`nectar bench nn --op gelu`);
//! - [`model`]: one secure inference at real shapes with random weights (`nectar bench model`);
//! - [`fixtures`]: tiny checkpoints and pseudo-random weights at published shapes.

pub mod blb;
pub mod fhe;
pub mod fixtures;
pub mod flute;
pub mod he;
pub mod linear;
pub mod lut;
pub mod model;
pub mod mpc;
pub mod nn;
pub mod ot;
