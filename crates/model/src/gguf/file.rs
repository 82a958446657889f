//! The GGUF container (llama.cpp's model file; ggml `docs/gguf.md`), versions 2 and 3,
//! little-endian: a header, typed metadata, a tensor index, then the aligned tensor data.
//!
//! ```text
//! "GGUF"  u32 version  u64 tensor_count  u64 metadata_kv_count
//! metadata_kv_count × (string key, u32 value type, value)
//! tensor_count × (string name, u32 n_dims, n_dims × u64 dim, u32 ggml type, u64 offset)
//! padding to general.alignment (default 32), then the data; each offset is relative to it
//! ```
//!
//! A string is a u64 byte length and UTF-8 bytes; an array a u32 element type, a u64 count and
//! the elements. `dim[0]` is the fastest-varying dimension, so a tensor with dims `[in, out]` is
//! the row-major `[out, in]` matrix (the shape [`TensorInfo::shape`] reports).
//!
//! The file is untrusted. Every count and length is checked against the bytes left in the file
//! before anything is allocated for it, and nothing is allocated in proportion to a count: a
//! string is read only if its bytes are there, an array grows as its elements are read, and
//! fixed-size array elements are kept as their raw bytes (so metadata costs at most a small
//! multiple of the file's own size). Arrays nest at most [`MAX_DEPTH`] deep. Tensors must lie
//! inside the file, at aligned offsets, with a byte size their type and dims imply. Any
//! violation is one line naming the file and what is wrong. The data is read later with
//! positioned reads of the open file (as [`crate::weights::Weights`] reads safetensors: no map,
//! so a file truncated underneath gives an error, not a SIGBUS).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::gguf::dequant::{dequantize, GgmlType};
use crate::ModelError;

/// `"GGUF"` read as a little-endian u32.
const MAGIC: u32 = 0x4655_4747;
/// Default of `general.alignment`.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Deepest nesting of arrays accepted (the format allows arrays of arrays; real files use none).
pub const MAX_DEPTH: usize = 4;
/// Most dimensions of a tensor (`GGML_MAX_DIMS`).
pub const MAX_DIMS: usize = 4;

/// Type of a metadata value (`gguf_metadata_value_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    F32,
    Bool,
    String,
    Array,
    U64,
    I64,
    F64,
}

impl ValueType {
    fn from_id(id: u32) -> Option<Self> {
        use ValueType::*;
        Some(match id {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    /// Bytes of one value of a fixed-size type (`None` for strings and arrays).
    fn size(self) -> Option<usize> {
        use ValueType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            String | Array => None,
        }
    }

    /// Fewest bytes a value of this type takes in the file (a string's or array's header).
    fn min_size(self) -> u64 {
        match self {
            ValueType::String => 8,
            ValueType::Array => 12,
            t => t.size().unwrap_or(1) as u64,
        }
    }
}

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Any integer or boolean type, widened (`Bool` is 0 or 1).
    Int(ValueType, i128),
    F32(f32),
    F64(f64),
    String(String),
    Array(Array),
}

impl Value {
    /// The value as a non-negative integer, if it is an integer.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Int(t, v) if *t != ValueType::Bool => u64::try_from(*v).ok(),
            _ => None,
        }
    }
    /// The value as a float, if it is a number. An F32 gives the f64 of its shortest decimal
    /// form: converters store HF's decimal configs (`rms_norm_eps = 1e-6`) as f32, and this
    /// gives back the decimal (not 9.99999997e-7).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::F32(x) => x.to_string().parse().ok(),
            Value::F64(x) => Some(*x),
            Value::Int(t, v) if *t != ValueType::Bool => Some(*v as f64),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Int(ValueType::Bool, v) => Some(*v != 0),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_array(&self) -> Option<&Array> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    /// A short description for `nectar info` and error messages.
    pub fn describe(&self) -> String {
        match self {
            Value::Int(ValueType::Bool, v) => (*v != 0).to_string(),
            Value::Int(_, v) => v.to_string(),
            Value::F32(x) => x.to_string(),
            Value::F64(x) => x.to_string(),
            Value::String(s) => format!("{s:?}"),
            Value::Array(a) => format!("array of {} {:?}", a.len(), a.elem),
        }
    }
}

/// A metadata array: fixed-size elements kept as their little-endian bytes, strings and nested
/// arrays as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    pub elem: ValueType,
    items: Items,
}

#[derive(Debug, Clone, PartialEq)]
enum Items {
    Raw(Vec<u8>),
    Strings(Vec<String>),
    Arrays(Vec<Array>),
}

impl Array {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.items {
            Items::Raw(b) => b.len() / self.elem.size().unwrap_or(1),
            Items::Strings(s) => s.len(),
            Items::Arrays(a) => a.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The elements, if they are strings.
    pub fn strings(&self) -> Option<&[String]> {
        match &self.items {
            Items::Strings(s) => Some(s),
            _ => None,
        }
    }
    /// The elements, if they are integers (booleans included), widened.
    pub fn ints(&self) -> Option<Vec<i128>> {
        let Items::Raw(b) = &self.items else { return None };
        let size = self.elem.size()?;
        let ints = b.chunks_exact(size).map(|c| int_of(self.elem, c));
        ints.collect()
    }
}

/// A fixed-size integer value from its little-endian bytes (`None` for floats).
fn int_of(t: ValueType, c: &[u8]) -> Option<i128> {
    let mut w = [0u8; 8];
    w[..c.len()].copy_from_slice(c);
    let u = u64::from_le_bytes(w);
    Some(match t {
        ValueType::U8 | ValueType::Bool | ValueType::U16 | ValueType::U32 | ValueType::U64 => u as i128,
        ValueType::I8 => c[0] as i8 as i128,
        ValueType::I16 => i16::from_le_bytes([c[0], c[1]]) as i128,
        ValueType::I32 => i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i128,
        ValueType::I64 => u as i64 as i128,
        _ => return None,
    })
}

/// One entry of the tensor index.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// GGUF order: `dims[0]` varies fastest.
    pub dims: Vec<u64>,
    pub ty: GgmlType,
    /// From the start of the data section.
    pub offset: u64,
    /// Bytes of data.
    pub bytes: u64,
}

impl TensorInfo {
    /// Row-major shape (the dims reversed), as the HF checkpoints and nectar's loaders use.
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().map(|&d| d as usize).collect()
    }
    /// Number of elements.
    pub fn elements(&self) -> usize {
        self.dims.iter().product::<u64>() as usize
    }
}

/// An opened GGUF file: its metadata and tensor index, the data read on demand.
pub struct GgufFile {
    path: PathBuf,
    file: File,
    version: u32,
    metadata: Vec<(String, Value)>,
    keys: HashMap<String, usize>,
    tensors: Vec<TensorInfo>,
    by_name: HashMap<String, usize>,
    data_start: u64,
}

impl std::fmt::Debug for GgufFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufFile")
            .field("path", &self.path)
            .field("version", &self.version)
            .field("metadata", &self.metadata.len())
            .field("tensors", &self.tensors.len())
            .finish()
    }
}

/// Reads the header through a buffer, tracking the position so every length is checked against
/// the bytes left before it is read.
struct Reader<'a> {
    r: BufReader<&'a File>,
    pos: u64,
    len: u64,
}

impl Reader<'_> {
    fn left(&self) -> u64 {
        self.len - self.pos
    }

    fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>, String> {
        if n > self.left() {
            return Err(format!("truncated: {what} needs {n} bytes at offset {}, the file has {} left", self.pos, self.left()));
        }
        let mut v = vec![0u8; n as usize];
        self.r.read_exact(&mut v).map_err(|e| format!("cannot read {what} at offset {}: {e}", self.pos))?;
        self.pos += n;
        Ok(v)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], String> {
        let v = self.bytes(N as u64, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(&v);
        Ok(a)
    }

    fn u32(&mut self, what: &str) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A string; invalid UTF-8 is an error for names and keys (`strict`), replaced otherwise.
    fn string(&mut self, what: &str, strict: bool) -> Result<String, String> {
        let n = self.u64(what)?;
        let b = self.bytes(n, what)?;
        match String::from_utf8(b) {
            Ok(s) => Ok(s),
            Err(_) if strict => Err(format!("{what} at offset {} is not UTF-8", self.pos - n)),
            Err(e) => Ok(String::from_utf8_lossy(e.as_bytes()).into_owned()),
        }
    }

    fn value(&mut self, t: ValueType, key: &str, depth: usize) -> Result<Value, String> {
        let what = || format!("the value of {key:?}");
        Ok(match t {
            ValueType::F32 => Value::F32(f32::from_le_bytes(self.array(&what())?)),
            ValueType::F64 => Value::F64(f64::from_le_bytes(self.array(&what())?)),
            ValueType::String => Value::String(self.string(&what(), false)?),
            ValueType::Array => Value::Array(self.array_value(key, depth)?),
            t => {
                let size = t.size().unwrap_or(1) as u64;
                let b = self.bytes(size, &what())?;
                if t == ValueType::Bool && b[0] > 1 {
                    return Err(format!("{key:?}: boolean value {} is neither 0 nor 1", b[0]));
                }
                Value::Int(t, int_of(t, &b).unwrap_or_default())
            }
        })
    }

    fn array_value(&mut self, key: &str, depth: usize) -> Result<Array, String> {
        if depth >= MAX_DEPTH {
            return Err(format!("{key:?}: arrays nested more than {MAX_DEPTH} deep"));
        }
        let id = self.u32(&format!("the array type of {key:?}"))?;
        let elem = ValueType::from_id(id).ok_or_else(|| format!("{key:?}: unknown array element type {id}"))?;
        let count = self.u64(&format!("the array length of {key:?}"))?;
        // Every element takes at least min_size bytes: a count the rest of the file cannot
        // hold is refused before anything is read or allocated.
        if count > self.left() / elem.min_size() {
            return Err(format!(
                "{key:?}: array of {count} {elem:?} elements does not fit in the {} bytes left",
                self.left()
            ));
        }
        let items = match elem {
            ValueType::String => {
                let mut v = Vec::new();
                for _ in 0..count {
                    v.push(self.string(&format!("an element of {key:?}"), false)?);
                }
                Items::Strings(v)
            }
            ValueType::Array => {
                let mut v = Vec::new();
                for _ in 0..count {
                    v.push(self.array_value(key, depth + 1)?);
                }
                Items::Arrays(v)
            }
            t => {
                let size = t.size().unwrap_or(1) as u64;
                let raw = self.bytes(count * size, &format!("the elements of {key:?}"))?;
                if t == ValueType::Bool && raw.iter().any(|&b| b > 1) {
                    return Err(format!("{key:?}: a boolean element is neither 0 nor 1"));
                }
                Items::Raw(raw)
            }
        };
        Ok(Array { elem, items })
    }
}

impl GgufFile {
    /// Opens `path` and validates its header, metadata and tensor index against the file.
    pub fn open(path: &Path) -> Result<Self, ModelError> {
        let bad = |m: String| ModelError::weights(path, format!("invalid GGUF file: {m}"));
        let file = File::open(path).map_err(|e| ModelError::weights(path, format!("cannot open: {e}")))?;
        let len = file.metadata().map_err(|e| ModelError::weights(path, format!("cannot stat: {e}")))?.len();
        let mut r = Reader { r: BufReader::with_capacity(1 << 16, &file), pos: 0, len };
        let magic = r.u32("the magic number").map_err(bad)?;
        if magic != MAGIC {
            return Err(bad(format!("bad magic {:?} (expected \"GGUF\")", magic.to_le_bytes().escape_ascii().to_string())));
        }
        let version = r.u32("the version").map_err(bad)?;
        match version {
            2 | 3 => {}
            1 => return Err(bad("version 1 is not supported (versions 2 and 3 are)".into())),
            v if v.swap_bytes() == 2 || v.swap_bytes() == 3 => {
                return Err(bad("big-endian files are not supported".into()))
            }
            v => return Err(bad(format!("unknown version {v} (versions 2 and 3 are supported)"))),
        }
        let n_tensors = r.u64("the tensor count").map_err(bad)?;
        let n_kv = r.u64("the metadata count").map_err(bad)?;
        // A key-value pair takes at least 13 bytes (key length, type, a one-byte value), a
        // tensor entry at least 32 (name length, n_dims, one dim, type, offset).
        if n_kv > r.left() / 13 || n_tensors > r.left() / 32 {
            return Err(bad(format!(
                "{n_kv} metadata entries and {n_tensors} tensors cannot fit in a file of {len} bytes"
            )));
        }
        let mut metadata = Vec::new();
        let mut keys = HashMap::new();
        for _ in 0..n_kv {
            let key = r.string("a metadata key", true).map_err(bad)?;
            let id = r.u32(&format!("the type of {key:?}")).map_err(bad)?;
            let t = ValueType::from_id(id).ok_or_else(|| bad(format!("{key:?}: unknown value type {id}")))?;
            let v = r.value(t, &key, 0).map_err(bad)?;
            if keys.insert(key.clone(), metadata.len()).is_some() {
                return Err(bad(format!("metadata key {key:?} appears twice")));
            }
            metadata.push((key, v));
        }
        let alignment = match keys.get("general.alignment").map(|&i| &metadata[i].1) {
            None => DEFAULT_ALIGNMENT,
            Some(v) => match v.as_u64() {
                Some(a) if a.is_power_of_two() && a <= 1 << 20 => a,
                _ => return Err(bad(format!("general.alignment = {} is not a power of two up to 2^20", v.describe()))),
            },
        };
        let mut tensors = Vec::new();
        let mut by_name = HashMap::new();
        for _ in 0..n_tensors {
            let name = r.string("a tensor name", true).map_err(bad)?;
            let nd = r.u32(&format!("the dimension count of {name:?}")).map_err(bad)? as usize;
            if nd == 0 || nd > MAX_DIMS {
                return Err(bad(format!("tensor {name:?} has {nd} dimensions (1 to {MAX_DIMS} allowed)")));
            }
            let mut dims = Vec::with_capacity(nd);
            for _ in 0..nd {
                dims.push(r.u64(&format!("the dims of {name:?}")).map_err(bad)?);
            }
            let id = r.u32(&format!("the type of {name:?}")).map_err(bad)?;
            let ty = GgmlType::from_id(id).ok_or_else(|| bad(format!("tensor {name:?} has unknown type id {id}")))?;
            let offset = r.u64(&format!("the offset of {name:?}")).map_err(bad)?;
            let elements = dims
                .iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d))
                .filter(|&n| n > 0 && n <= len.saturating_mul(8))
                .ok_or_else(|| bad(format!("tensor {name:?} has dims {dims:?}: empty or too large for the file")))?;
            let (per, size) = ty.block();
            if dims[0] % per as u64 != 0 {
                return Err(bad(format!(
                    "tensor {name:?}: a row of {} {} elements is not a whole number of {per}-element blocks",
                    dims[0],
                    ty.name()
                )));
            }
            let bytes = elements / per as u64 * size as u64;
            if offset % alignment != 0 {
                return Err(bad(format!("tensor {name:?} at offset {offset} is not aligned to {alignment}")));
            }
            if by_name.insert(name.clone(), tensors.len()).is_some() {
                return Err(bad(format!("tensor {name:?} appears twice")));
            }
            tensors.push(TensorInfo { name, dims, ty, offset, bytes });
        }
        let data_start = r.pos.div_ceil(alignment) * alignment;
        for t in &tensors {
            let end = data_start.checked_add(t.offset).and_then(|s| s.checked_add(t.bytes));
            if end.is_none_or(|e| e > len) {
                return Err(bad(format!(
                    "tensor {:?} ({} {:?}, {} bytes at data offset {}) ends past the end of the file ({len} bytes; truncated?)",
                    t.name,
                    t.ty.name(),
                    t.dims,
                    t.bytes,
                    t.offset
                )));
            }
        }
        drop(r);
        Ok(GgufFile { path: path.to_path_buf(), file, version, metadata, keys, tensors, by_name, data_start })
    }

    /// The file this was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// GGUF version (2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Every metadata entry, in file order.
    pub fn metadata(&self) -> &[(String, Value)] {
        &self.metadata
    }

    /// The metadata value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.keys.get(key).map(|&i| &self.metadata[i].1)
    }

    /// The tensor index, in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// The index entry of tensor `name` (a GGUF name).
    pub fn tensor_info(&self, name: &str) -> Option<&TensorInfo> {
        self.by_name.get(name).map(|&i| &self.tensors[i])
    }

    /// Tensor `name` (a GGUF name) dequantised to `f32`, in row-major order of
    /// [`TensorInfo::shape`].
    pub fn read_f32(&self, name: &str) -> Result<Vec<f32>, ModelError> {
        let t = self
            .tensor_info(name)
            .ok_or_else(|| ModelError::weights(&self.path, format!("missing tensor {name:?}")))?;
        let mut bytes = vec![0u8; t.bytes as usize];
        self.file.read_exact_at(&mut bytes, self.data_start + t.offset).map_err(|e| {
            ModelError::weights(&self.path, format!("cannot read tensor {name:?} (file changed while open?): {e}"))
        })?;
        dequantize(t.ty, &bytes, t.elements())
            .map_err(|e| ModelError::weights(&self.path, format!("tensor {name:?}: {e}")))
    }
}
