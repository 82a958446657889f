//! `model.safetensors` with typed, shape-checked access.
//!
//! The header is read and validated at open (the `safetensors` crate's header format; offsets
//! contiguous, each tensor's byte size equal to dtype × shape, the data ending exactly at the
//! end of the file), so a truncated or corrupt file is rejected before any tensor is read.
//! Tensors are then read with positioned reads of the open file, never memory-mapped: a file
//! truncated or rewritten while a server runs gives a read error (or different numbers), never
//! a SIGBUS that would kill every session (issue 18). The cost is one copy per tensor read,
//! which a map needed too (tensors are returned converted); the page cache stays out of the
//! process's resident set. Tensors are returned as `f32` vectors (F32 copied, F16/BF16/F64
//! converted), row-major in the file's order.
//!
//! Hugging Face checkpoints name the same tensor with or without the task-model prefix
//! (`bert.embeddings...` in `BertForSequenceClassification`, `embeddings...` in a bare
//! `BertModel` such as MiniLM; `transformer.h.0...` or `h.0...` for GPT-2), so lookups take the
//! base name and try the known prefixes.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use safetensors::tensor::Metadata;
use safetensors::Dtype;

use crate::ModelError;

/// Largest header accepted (the `safetensors` crate's own limit).
const MAX_HEADER_BYTES: u64 = 100_000_000;

/// Prefixes under which HF task models store their base model.
const PREFIXES: [&str; 4] = ["bert.", "transformer.", "model.", "vit."];

#[derive(Debug, Clone)]
struct Entry {
    dtype: Dtype,
    shape: Vec<usize>,
    start: usize,
    end: usize,
}

/// An opened safetensors file.
pub struct Weights {
    path: PathBuf,
    file: File,
    /// File offset of the first tensor byte (8 + header length).
    data_start: u64,
    entries: HashMap<String, Entry>,
}

impl std::fmt::Debug for Weights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Weights")
            .field("path", &self.path)
            .field("tensors", &self.entries.len())
            .finish()
    }
}

impl Weights {
    /// Opens `path` and validates its header against the file's length.
    pub fn open(path: &Path) -> Result<Self, ModelError> {
        let bad = |m: String| ModelError::weights(path, m);
        let mut file = File::open(path).map_err(|e| bad(format!("cannot open: {e}")))?;
        let len = file.metadata().map_err(|e| bad(format!("cannot stat: {e}")))?.len();
        if len < 8 {
            return Err(bad(format!("invalid safetensors file: only {len} bytes")));
        }
        let mut n = [0u8; 8];
        file.read_exact(&mut n).map_err(|e| bad(format!("cannot read the header: {e}")))?;
        let n = u64::from_le_bytes(n);
        if n > MAX_HEADER_BYTES || n > len - 8 {
            return Err(bad(format!("invalid safetensors file: header of {n} bytes in a file of {len}")));
        }
        let mut header = vec![0u8; n as usize];
        file.read_exact(&mut header).map_err(|e| bad(format!("cannot read the header: {e}")))?;
        let header = std::str::from_utf8(&header)
            .map_err(|_| bad("invalid safetensors file: header is not UTF-8".into()))?;
        let meta: Metadata = serde_json::from_str(header)
            .map_err(|e| bad(format!("invalid safetensors file: header: {e}")))?;
        let data_start = 8 + n;
        let mut entries = HashMap::new();
        let mut spans = Vec::new();
        for (name, info) in meta.tensors() {
            let (start, end) = info.data_offsets;
            let bytes = info
                .shape
                .iter()
                .try_fold(info.dtype.size(), |a, &d| a.checked_mul(d))
                .ok_or_else(|| bad(format!("invalid safetensors file: tensor \"{name}\" is too large")))?;
            if end < start || end - start != bytes {
                return Err(bad(format!(
                    "invalid safetensors file: tensor \"{name}\" spans {start}..{end}, its dtype and shape need {bytes} bytes"
                )));
            }
            spans.push((start, end));
            entries.insert(name, Entry { dtype: info.dtype, shape: info.shape.clone(), start, end });
        }
        // The data must tile the rest of the file exactly, as the crate's own check requires.
        spans.sort_unstable();
        let mut at = 0usize;
        for (s, e) in spans {
            if s != at {
                return Err(bad(format!("invalid safetensors file: tensor data not contiguous at byte {s}")));
            }
            at = e;
        }
        if data_start.checked_add(at as u64) != Some(len) {
            return Err(bad(format!(
                "invalid safetensors file: tensors end at byte {}, the file has {len} (truncated or padded)",
                data_start.saturating_add(at as u64)
            )));
        }
        Ok(Weights { path: path.to_path_buf(), file, data_start, entries })
    }

    /// The file this was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// All tensor names in the file (sorted).
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.entries.keys().map(|s| s.as_str()).collect();
        v.sort_unstable();
        v
    }

    fn resolve(&self, name: &str) -> Option<(&str, &Entry)> {
        if let Some((k, e)) = self.entries.get_key_value(name) {
            return Some((k.as_str(), e));
        }
        for p in PREFIXES {
            if let Some((k, e)) = self.entries.get_key_value(&format!("{p}{name}")) {
                return Some((k.as_str(), e));
            }
        }
        None
    }

    /// Whether a tensor exists under `name` or a prefixed form of it.
    pub fn contains(&self, name: &str) -> bool {
        self.resolve(name).is_some()
    }

    /// Shape of a tensor, if present.
    pub fn shape(&self, name: &str) -> Option<&[usize]> {
        self.resolve(name).map(|(_, e)| e.shape.as_slice())
    }

    /// Checks that tensor `name` (or a prefixed form) exists with `shape` and a float dtype,
    /// without reading its data.
    pub fn check(&self, name: &str, shape: &[usize]) -> Result<(), ModelError> {
        let (full, e) = self
            .resolve(name)
            .ok_or_else(|| ModelError::weights(&self.path, format!("missing tensor \"{name}\"")))?;
        if e.shape != shape {
            return Err(ModelError::weights(
                &self.path,
                format!("tensor \"{full}\" has shape {:?}, expected {:?}", e.shape, shape),
            ));
        }
        if !matches!(e.dtype, Dtype::F32 | Dtype::F64 | Dtype::F16 | Dtype::BF16) {
            return Err(ModelError::weights(
                &self.path,
                format!("tensor \"{full}\" has dtype {:?}, expected a float type (F32, F16, BF16, F64)", e.dtype),
            ));
        }
        Ok(())
    }

    /// Tensor `name` (or a prefixed form) as `f32`, checking that its shape is `shape`.
    pub fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let (full, e) = self
            .resolve(name)
            .ok_or_else(|| ModelError::weights(&self.path, format!("missing tensor \"{name}\"")))?;
        if e.shape != shape {
            return Err(ModelError::weights(
                &self.path,
                format!(
                    "tensor \"{full}\" has shape {:?}, expected {:?}",
                    e.shape, shape
                ),
            ));
        }
        let mut bytes = vec![0u8; e.end - e.start];
        self.file.read_exact_at(&mut bytes, self.data_start + e.start as u64).map_err(|err| {
            ModelError::weights(&self.path, format!("cannot read tensor \"{full}\" (file changed while open?): {err}"))
        })?;
        let out: Vec<f32> = match e.dtype {
            Dtype::F32 => bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
            Dtype::F64 => bytes
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) as f32)
                .collect(),
            Dtype::F16 => bytes.chunks_exact(2).map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]]))).collect(),
            Dtype::BF16 => bytes.chunks_exact(2).map(|c| bf16_to_f32(u16::from_le_bytes([c[0], c[1]]))).collect(),
            other => {
                return Err(ModelError::weights(
                    &self.path,
                    format!("tensor \"{full}\" has dtype {other:?}, expected a float type (F32, F16, BF16, F64)"),
                ))
            }
        };
        if out.len() != shape.iter().product::<usize>() {
            return Err(ModelError::weights(
                &self.path,
                format!("tensor \"{full}\" has inconsistent size"),
            ));
        }
        Ok(out)
    }

    /// Number of parameters in floating-point tensors and the dominant dtype (by count).
    pub fn param_stats(&self) -> (usize, String) {
        let mut by_dtype: HashMap<String, usize> = HashMap::new();
        let mut total = 0;
        for e in self.entries.values() {
            if matches!(e.dtype, Dtype::F32 | Dtype::F16 | Dtype::BF16 | Dtype::F64) {
                let n: usize = e.shape.iter().product();
                total += n;
                *by_dtype.entry(format!("{:?}", e.dtype)).or_default() += n;
            }
        }
        let dtype = by_dtype
            .into_iter()
            .max_by_key(|(_, n)| *n)
            .map(|(d, _)| d)
            .unwrap_or_else(|| "none".into());
        (total, dtype)
    }
}

/// IEEE binary16 to f32 (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: value = m * 2^-24; normalise into an f32.
            let v = m as f32 * (1.0 / 16_777_216.0);
            return if sign != 0 { -v } else { v };
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// bfloat16 to f32 (exact: the upper half of an f32).
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// Named f32 tensors of a checkpoint, read on demand (never all at once).
///
/// Implemented by [`Weights`] (the open checkpoint file) and by the benches'
/// `nectar_bench::fixtures::random::RandomWeights` (deterministic pseudo-random tensors at the
/// real shapes).
pub trait WeightSource: Send + Sync {
    /// Tensor `name` (base name, without task prefix) as f32, checked to have `shape`.
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError>;
    /// Whether the tensor exists.
    fn contains(&self, name: &str) -> bool;
    /// Its shape, if present.
    fn shape(&self, name: &str) -> Option<Vec<usize>>;
    /// Whether tensor `name` is present at `shape`, without reading its data.
    fn check(&self, name: &str, shape: &[usize]) -> Result<(), ModelError> {
        match self.shape(name) {
            None => Err(ModelError::Input(format!("missing tensor \"{name}\""))),
            Some(s) if s != shape => Err(ModelError::Input(format!(
                "tensor \"{name}\" has shape {s:?}, expected {shape:?}"
            ))),
            Some(_) => Ok(()),
        }
    }
    /// The cache of encoded layer weights this source keeps, if any (the server's,
    /// [`crate::secure::weight_cache::CachingSource`]).
    fn encoded(&self) -> Option<&crate::encoded::EncodedWeights> {
        None
    }
}

impl WeightSource for Weights {
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        Weights::tensor(self, name, shape)
    }
    fn contains(&self, name: &str) -> bool {
        Weights::contains(self, name)
    }
    fn shape(&self, name: &str) -> Option<Vec<usize>> {
        Weights::shape(self, name).map(|s| s.to_vec())
    }
    fn check(&self, name: &str, shape: &[usize]) -> Result<(), ModelError> {
        Weights::check(self, name, shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversions() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert!(f16_to_f32(0x7e00).is_nan());
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
        assert_eq!(bf16_to_f32(0xc0a0), -5.0);
    }

    #[test]
    fn reads_half_types_and_checks_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("model.safetensors");
        let f16: Vec<u8> = [0x3c00u16, 0xc000]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let bf16: Vec<u8> = [0x3f80u16, 0xc0a0, 0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let views = vec![
            (
                "bert.a".to_string(),
                safetensors::tensor::TensorView::new(Dtype::F16, vec![2], &f16).unwrap(),
            ),
            (
                "b".to_string(),
                safetensors::tensor::TensorView::new(Dtype::BF16, vec![1, 3], &bf16).unwrap(),
            ),
        ];
        safetensors::serialize_to_file(views, &None, &p).unwrap();
        let w = Weights::open(&p).unwrap();
        assert_eq!(w.tensor("a", &[2]).unwrap(), vec![1.0, -2.0]);
        assert_eq!(w.tensor("b", &[1, 3]).unwrap(), vec![1.0, -5.0, 0.0]);
        let e = w.tensor("b", &[3]).unwrap_err().to_string();
        assert!(
            e.ends_with("model.safetensors: tensor \"b\" has shape [1, 3], expected [3]"),
            "{e}"
        );
        let e = w.tensor("c", &[3]).unwrap_err().to_string();
        assert!(
            e.ends_with("model.safetensors: missing tensor \"c\""),
            "{e}"
        );
        assert_eq!(w.param_stats(), (5, "BF16".to_string()));
    }
}
