//! Equality with public constants (`i_equal`, BumbleBee Table IV) and token id → one-hot.
//!
//! `1{x = c}` for integers: with `d = x − c`, one batched less-than against {0, 1} gives
//! `1{d < 0}` and `1{d < 1}`, and `1{d = 0} = 1{d < 1} ⊕ 1{d < 0}` (the bits are monotone, so
//! XOR replaces AND: no AND triple). Exact for `|x − c| < 2^(l−1) − 1`.
//! One-hot of `n` token ids over a vocabulary of `V`: the ids are replicated V times, one
//! `i_equal` on n·V elements (less_than n·V × 2) and one b2a on n·V bits; the result is the
//! ring integers 0/1 (not scaled by 2^f), so `one_hot × table` needs no truncation.

use crate::backend::{int, Backend};
use crate::NnError;

/// `1{x_i = c_i}` with public ring integers `c` (one, broadcast, or one per element).
pub fn i_equal<B: Backend + ?Sized>(b: &mut B, x: &B::Val, c: &[u64]) -> Result<B::Bit, NnError> {
    let nc: Vec<u64> = c.iter().map(|&v| int(b, 0).wrapping_sub(v) & crate::backend::ring_of(b.format()).mask()).collect();
    let d = b.add_const(x, &nc)?;
    let one = int(b, 1);
    let mut bits = b.less_than_const(&d, &[0, one], 0)?.into_iter();
    match (bits.next(), bits.next()) {
        (Some(lt0), Some(lt1)) => b.xor(&lt1, &lt0),
        _ => Err(NnError::BadArgument("less_than_const returned too few bits".into())),
    }
}

/// One-hot rows (`n × vocab`, row-major) of `n` token ids given as ring integers.
pub fn one_hot<B: Backend + ?Sized>(b: &mut B, ids: &B::Val, vocab: usize) -> Result<B::Val, NnError> {
    if vocab == 0 {
        return Err(NnError::BadArgument("vocabulary of size 0".into()));
    }
    let n = b.len(ids);
    let rep = b.gather(ids, &(0..n * vocab).map(|p| p / vocab).collect::<Vec<_>>())?;
    let cs: Vec<u64> = (0..n * vocab).map(|p| int(b, (p % vocab) as i64)).collect();
    let eq = i_equal(b, &rep, &cs)?;
    b.b2a(&eq)
}
