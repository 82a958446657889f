//! Malformed GGUF files (issue 49): bad magic and versions, every truncation of the header,
//! absurd counts and lengths, unknown value and tensor types, tensors past the end, misaligned
//! or overlapping the header, dims that overflow — each an `Err` of one line naming the file,
//! never a panic and never an allocation sized by the untrusted number (the counts below would
//! ask for exabytes). Then random bit flips and truncations of a valid file (proptest): open
//! fails cleanly, or every tensor reads as values or an error.

use nectar_bench::fixtures::gguf::{random_blocks, GgufBuilder, Meta};
use nectar_model::gguf::GgufFile;
use proptest::collection::vec;
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A small valid file: metadata of every kind the builder writes and tensors of four types.
fn base() -> &'static GgufBuilder {
    static B: OnceLock<GgufBuilder> = OnceLock::new();
    B.get_or_init(|| {
        GgufBuilder::default()
            .meta("general.architecture", Meta::Str("llama".into()))
            .meta("general.alignment", Meta::U32(32))
            .meta("a.u8", Meta::U8(7))
            .meta("a.i32", Meta::I32(-3))
            .meta("a.u64", Meta::U64(1 << 40))
            .meta("a.f32", Meta::F32(0.5))
            .meta("a.bool", Meta::Bool(true))
            .meta("a.strs", Meta::Strs(vec!["x".into(), "yz".into(), String::new()]))
            .meta("a.ints", Meta::I32s(vec![1, -2, 3]))
            .meta("a.floats", Meta::F32s(vec![1.5, -2.5]))
            .tensor("q8", &[2, 32], 8, random_blocks(8, 64, 1))
            .tensor("q4k", &[1, 256], 12, random_blocks(12, 256, 2))
            .tensor("f16", &[3, 4], 1, random_blocks(1, 12, 3))
            .tensor("q41", &[32], 3, random_blocks(3, 32, 4))
    })
}

/// Byte offset where the tensor index starts and where it ends in `base()`'s bytes.
fn index_span() -> (usize, usize) {
    let b = base();
    let first = [2u64.to_le_bytes().as_slice(), b"q8"].concat();
    let start = b.to_bytes().windows(first.len()).position(|w| w == first).unwrap();
    let index: usize = b.tensors.iter().map(|t| 8 + t.name.len() + 4 + 8 * t.dims.len() + 4 + 8).sum();
    (start, start + index)
}

fn scratch(name: &str) -> PathBuf {
    static D: OnceLock<tempfile::TempDir> = OnceLock::new();
    D.get_or_init(|| tempfile::tempdir().unwrap()).path().join(format!("{name}-{:?}.gguf", std::thread::current().id()))
}

/// Opens `bytes` as a file; on success reads every tensor. Returns the open error, if any.
fn open(bytes: &[u8], name: &str) -> Option<String> {
    let path = scratch(name);
    std::fs::write(&path, bytes).unwrap();
    let r = match GgufFile::open(&path) {
        Ok(f) => {
            for t in f.tensors().to_vec() {
                if let Err(e) = f.read_f32(&t.name) {
                    check_line(&e.to_string(), &path);
                }
            }
            None
        }
        Err(e) => {
            let e = e.to_string();
            check_line(&e, &path);
            Some(e)
        }
    };
    let _ = std::fs::remove_file(&path);
    r
}

fn check_line(e: &str, path: &Path) {
    assert!(!e.contains('\n'), "multi-line error: {e}");
    assert!(e.starts_with(&path.display().to_string()), "error does not name the file: {e}");
}

/// `open` must fail with a message containing `want`.
fn refused(bytes: &[u8], want: &str) {
    let e = open(bytes, "refused").unwrap_or_else(|| panic!("accepted; expected an error containing {want:?}"));
    assert!(e.contains(want), "{e}\n  expected to contain {want:?}");
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn the_base_file_is_valid() {
    assert_eq!(open(&base().to_bytes(), "base"), None);
    let f = {
        let p = scratch("base-kv");
        base().write(&p).unwrap();
        GgufFile::open(&p).unwrap()
    };
    assert_eq!(f.get("a.i32").unwrap().describe(), "-3");
    assert_eq!(f.get("a.strs").unwrap().as_array().unwrap().strings().unwrap(), ["x", "yz", ""]);
    assert_eq!(f.get("a.ints").unwrap().as_array().unwrap().ints().unwrap(), [1, -2, 3]);
    assert_eq!(f.get("a.bool").unwrap().as_bool(), Some(true));
    assert_eq!(f.get("a.u64").unwrap().as_u64(), Some(1 << 40));
}

#[test]
fn magic_and_version() {
    let good = base().to_bytes();
    let mut b = good.clone();
    b[..4].copy_from_slice(b"GGML");
    refused(&b, "bad magic \"GGML\" (expected \"GGUF\")");
    for (v, want) in [
        (1u32, "version 1 is not supported"),
        (99, "unknown version 99"),
        (3u32.swap_bytes(), "big-endian files are not supported"),
    ] {
        let mut b = good.clone();
        b[4..8].copy_from_slice(&v.to_le_bytes());
        refused(&b, want);
    }
    let b = GgufBuilder { version: 2, ..base().clone() }.to_bytes();
    assert_eq!(open(&b, "v2"), None);
}

#[test]
fn every_truncation_is_an_error() {
    let good = base().to_bytes();
    for cut in 0..good.len() {
        let e = open(&good[..cut], "cut").unwrap_or_else(|| panic!("a file cut at {cut} of {} opened", good.len()));
        let known = ["truncated", "cannot fit", "does not fit", "past the end"];
        assert!(known.iter().any(|k| e.contains(k)), "cut at {cut}: {e}");
    }
}

#[test]
fn absurd_counts_and_lengths() {
    let good = base().to_bytes();
    // Tensor count and metadata count (header offsets 8 and 16).
    for (at, v) in [(8, u64::MAX), (8, 1 << 40), (16, u64::MAX), (16, 1 << 33)] {
        let mut b = good.clone();
        put_u64(&mut b, at, v);
        refused(&b, "cannot fit in a file of");
    }
    // The first key's length.
    let mut b = good.clone();
    put_u64(&mut b, 24, u64::MAX - 3);
    refused(&b, "truncated: a metadata key needs 18446744073709551612 bytes");
    // A string array's count (after key "a.strs", type 9, element type 8).
    let key = b"a.strs";
    let at = good.windows(key.len()).position(|w| w == key).unwrap() + key.len() + 4 + 4;
    let mut b = good.clone();
    put_u64(&mut b, at, u64::MAX / 2);
    refused(&b, "\"a.strs\": array of 9223372036854775807 String elements does not fit");
    // An integer array's count.
    let key = b"a.ints";
    let at = good.windows(key.len()).position(|w| w == key).unwrap() + key.len() + 4 + 4;
    let mut b = good.clone();
    put_u64(&mut b, at, 1 << 62);
    refused(&b, "\"a.ints\": array of 4611686018427387904 I32 elements does not fit");
}

#[test]
fn unknown_and_nested_types() {
    let b = GgufBuilder::default().meta("k", Meta::U8(1)).to_bytes();
    // Value type id is the u32 after the key (24 + 8 + 1).
    let mut bad = b.clone();
    bad[33..37].copy_from_slice(&13u32.to_le_bytes());
    refused(&bad, "\"k\": unknown value type 13");
    let mut bad = b.clone();
    bad[37] = 2;
    bad[33..37].copy_from_slice(&7u32.to_le_bytes());
    refused(&bad, "\"k\": boolean value 2 is neither 0 nor 1");
    // Arrays of arrays, nested past the limit: each level is (type 9, count 1).
    let mut deep = Vec::new();
    deep.extend(b"GGUF");
    deep.extend(3u32.to_le_bytes());
    deep.extend(0u64.to_le_bytes());
    deep.extend(1u64.to_le_bytes());
    deep.extend(1u64.to_le_bytes());
    deep.push(b'd');
    deep.extend(9u32.to_le_bytes());
    for _ in 0..10_000 {
        deep.extend(9u32.to_le_bytes());
        deep.extend(1u64.to_le_bytes());
    }
    refused(&deep, "\"d\": arrays nested more than 4 deep");
    // Unknown tensor types: 4 and 5 (removed Q4_2 / Q4_3), 200.
    for id in [4u32, 5, 200] {
        let b = GgufBuilder::default().tensor("t", &[32], id, vec![0; 32]).to_bytes();
        refused(&b, &format!("tensor \"t\" has unknown type id {id}"));
    }
    // A known type nectar cannot dequantise opens, and reading it is an error naming it.
    let b = GgufBuilder::default().tensor("q2k", &[256], 10, vec![0; 84]).to_bytes();
    let p = scratch("q2k");
    std::fs::write(&p, &b).unwrap();
    let e = GgufFile::open(&p).unwrap().read_f32("q2k").unwrap_err().to_string();
    assert!(e.contains("tensor \"q2k\": type Q2_K is not supported"), "{e}");
}

#[test]
fn tensor_index_errors() {
    let one = |dims: &[usize], ty: u32, data: Vec<u8>| GgufBuilder::default().tensor("t", dims, ty, data);
    // Dims: none, five, zero, overflowing, rows not whole blocks.
    let mut b = one(&[4], 0, vec![0; 16]);
    b.tensors[0].dims = vec![];
    refused(&b.to_bytes(), "tensor \"t\" has 0 dimensions (1 to 4 allowed)");
    b.tensors[0].dims = vec![1; 5];
    refused(&b.to_bytes(), "tensor \"t\" has 5 dimensions");
    b.tensors[0].dims = vec![4, 0];
    refused(&b.to_bytes(), "empty or too large for the file");
    b.tensors[0].dims = vec![u64::MAX / 2, 4];
    refused(&b.to_bytes(), "empty or too large for the file");
    b.tensors[0].dims = vec![1 << 40];
    refused(&b.to_bytes(), "empty or too large for the file");
    let b = one(&[16], 8, vec![0; 34]);
    refused(&b.to_bytes(), "a row of 16 Q8_0 elements is not a whole number of 32-element blocks");
    // Data past the end: the file says 64 elements of F32, holds 32.
    let mut b = one(&[32], 0, vec![0; 128]);
    b.tensors[0].dims = vec![64];
    refused(&b.to_bytes(), "ends past the end of the file");
    // Offsets: past the end, unaligned.
    let good = one(&[32], 0, vec![0; 128]).to_bytes();
    let off_at = 24 + 8 + 1 + 4 + 8 + 4; // name "t", one dim, type, then the offset
    let mut b = good.clone();
    put_u64(&mut b, off_at, 1 << 20);
    refused(&b, "ends past the end of the file");
    let mut b = good.clone();
    put_u64(&mut b, off_at, u64::MAX - 63);
    refused(&b, "ends past the end of the file");
    let mut b = good.clone();
    put_u64(&mut b, off_at, 4);
    refused(&b, "at offset 4 is not aligned to 32");
    // Alignment that is not a power of two; duplicate names and keys.
    let b = GgufBuilder::default().meta("general.alignment", Meta::U32(24)).to_bytes();
    refused(&b, "general.alignment = 24 is not a power of two");
    let b = GgufBuilder::default().meta("general.alignment", Meta::U32(0)).to_bytes();
    refused(&b, "general.alignment = 0 is not a power of two");
    let b = one(&[8], 0, vec![0; 32]).tensor("t", &[8], 0, vec![0; 32]).to_bytes();
    refused(&b, "tensor \"t\" appears twice");
    let b = GgufBuilder::default().meta("k", Meta::U8(1)).meta("k", Meta::U8(2)).to_bytes();
    refused(&b, "metadata key \"k\" appears twice");
    // A name that is not UTF-8.
    let mut b = one(&[8], 0, vec![0; 32]);
    b.tensors[0].name = "\u{e9}".into();
    let mut bytes = b.to_bytes();
    let at = bytes.windows(2).position(|w| w == "\u{e9}".as_bytes()).unwrap();
    bytes[at] = 0xff;
    refused(&bytes, "a tensor name at offset 32 is not UTF-8");
    let (start, end) = index_span();
    assert!(start < end);
}

fn mutate(base: &[u8], flips: &[(usize, u8)], lo: usize, hi: usize, cut: usize) -> Vec<u8> {
    let mut b = base.to_vec();
    for &(i, x) in flips {
        b[lo + i % (hi - lo)] ^= x;
    }
    b.truncate(cut % (b.len() + 1));
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Flips anywhere in the header and index, random truncation.
    #[test]
    fn flipped_headers_are_errors_not_panics(flips in vec((any::<usize>(), any::<u8>()), 1..12), cut in any::<usize>()) {
        let good = base().to_bytes();
        let (_, end) = index_span();
        let keep = if cut % 4 == 0 { cut } else { usize::MAX };
        let _ = open(&mutate(&good, &flips, 0, end, keep), "flip");
    }

    /// Flips confined to the tensor index (dims, types, offsets), never truncated.
    #[test]
    fn flipped_indexes_are_errors_not_panics(flips in vec((any::<usize>(), any::<u8>()), 1..6)) {
        let good = base().to_bytes();
        let (start, end) = index_span();
        let _ = open(&mutate(&good, &flips, start, end, usize::MAX), "index");
    }
}
