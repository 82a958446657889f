//! The error type of BLB's planner and executor.

/// Errors of planning or evaluating BLB's fused blocks. The variants render as the model
/// layer's `Input` and `Unsupported` do, so a message reads the same wherever it surfaces.
#[derive(Debug, thiserror::Error)]
pub enum BlbError {
    /// A caller-supplied value is out of range or of the wrong shape (token count, a tensor).
    #[error("invalid input: {0}")]
    Input(String),
    /// A shape, operator or value BLB's planner or executor does not handle.
    #[error("unsupported: {0}")]
    Unsupported(String),
}
