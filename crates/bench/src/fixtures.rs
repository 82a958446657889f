//! Inputs for tests and benches, never for a user's inference: [`tiny`] writes deterministic
//! tiny checkpoints of every architecture, [`random`] serves pseudo-random weights at the
//! published shapes (`nectar bench model --arch`, `nectar plan --shape`), [`gguf`] builds GGUF
//! files byte by byte (valid ones, and the malformed ones the reader must refuse).

pub mod gguf;
pub mod random;
pub mod tiny;
