//! GGUF, llama.cpp's model file (ggml `docs/gguf.md`): the container ([`file`]), the GGML
//! tensor types and their dequantisation ([`dequant`]), a LLaMA file read as an HF checkpoint
//! ([`llama`]: config, names, the rotary row permutation undone) and its vocabulary as a
//! tokenizer ([`vocab`]).
//!
//! [`crate::Model::load`] takes a `.gguf` file (or a directory holding exactly one) wherever it
//! takes a Hugging Face directory; the tensors are dequantised to `f32` as they are read.

pub mod dequant;
pub mod file;
pub mod llama;
pub mod vocab;

pub use dequant::GgmlType;
pub use file::{GgufFile, TensorInfo, Value};
pub use llama::GgufLlama;
