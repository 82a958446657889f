//! Bench (filled below).
use crate::HeError;
/// One bench line.
#[derive(Clone, Debug)]
pub struct HeBenchLine;
/// Bench.
pub fn bench_he(_n: usize) -> Result<Vec<HeBenchLine>, HeError> {
    Err(HeError::InvalidParams("not yet".into()))
}
