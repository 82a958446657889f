//! `nectar-blb` (layer `blb`, see `DESIGN.md`; below `suite` and `model`): BLB's §4
//! FineGrainFusion planner, its plaintext evaluation and the CKKS executor of fused blocks
//! with their CKKS <-> MPC conversions (§5–6). It reads a layer's public shape
//! ([`LayerSpec`]) and the server's values bound by operator name ([`LayerParams`]); the model
//! layer fills both from its configurations and checkpoints and runs the plan on its engines.
//!
//! - [`spec`]: the layer shape the planner reads; [`params`]: the server's values.
//! - [`ops`]: BLB's operator vocabulary (Table 2), Table 4's fusion patterns, Table 6's sets.
//! - [`graph`]: one layer's operator graph at BLB's granularity (App. B).
//! - [`cost`]: closed-form rotation counts (§4.2.1, §5.1, App. C).
//! - [`plan`]: placement, fusion, depth repair and parameter choice ([`FusionPlan`]; `nectar plan`).
//! - [`eval`]: the layer graph's plaintext twin in `f64`.
//! - [`exec`]: a fused block on [`nectar_linear::ckks_matmul::SlotOps`] (CKKS or the slot simulator).
//! - [`call`]: one fused block as both parties run it, and what it needs of the CKKS parameters.
//! - [`fused_ckks`]: each party's CKKS keys and the conversions around a block.

pub mod call;
pub mod cost;
pub mod error;
pub mod eval;
pub mod exec;
pub mod fused_ckks;
pub mod graph;
pub mod ops;
pub mod params;
pub mod plan;
pub mod spec;

pub use call::{BlockExec, FusedCall};
pub use error::BlbError;
pub use fused_ckks::FusedCkks;
pub use graph::{LayerGraph, Operand, Part, Shape};
pub use ops::{choose_preset, fuse, Category, CkksPreset, LinearKind, NonlinearKind, OpKind, BLB_TABLE6, TABLE4};
pub use params::LayerParams;
pub use plan::{plan_graph, Conversion, FusedBlock, FusionPlan, MpcOp, MpcRole, ParamSet, PlanItem, PlannedOp, MAX_TOKENS};
pub use spec::LayerSpec;
