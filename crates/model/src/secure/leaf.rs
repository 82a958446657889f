//! LEAF's FFN block on an engine (suite `ffn = leaf`, issue 16 item 6, [`nectar_fhe::ffn`]):
//! `act(X·W1 + b1)` evaluated by the server alone between two share conversions ([`ffn1`]),
//! with the session's LEAF keys (the protocol's state, [`nectar_nn::ffn::leaf`]), or on the twin
//! by the same integers in the clear.

use crate::secure::engine::{Engine, EngineSession};
use nectar_fhe::{LeafFormat, LeafTable};
use nectar_nn::ffn::leaf::{LeafParty, STATE_KEY};
use nectar_nn::NnError;

fn be<E: std::error::Error + Send + Sync + 'static>(e: E) -> NnError {
    NnError::Backend(Box::new(e))
}

/// `act(X·W1 + b1)`: `x` shares mod `2^27` of `X` (`rows × in_dim`, at `LeafFormat::x_frac`
/// fractional bits); the server's `weights` = `(W1, b1)` (`in_dim × out_dim` at `w_frac`, bias
/// mod `2^27` at `pre_frac`) and `table`; returns shares mod `2^27` of the activations at
/// `out_frac`. Secure: the protocol's noise moves an input within ≈ 2^-7 of a `1/16` grid
/// boundary to the neighbouring bin and adds ≈ 2^-8 to the output; twin: the exact integers.
pub fn ffn1<E: Engine>(
    e: &mut E,
    x: &[u64],
    (rows, in_dim, out_dim): (usize, usize, usize),
    weights: Option<(&[i32], &[u32])>,
    table: &LeafTable,
) -> Result<Vec<u64>, NnError> {
    match e.session() {
        Some(EngineSession { ch, prg, states, .. }) => {
            let party = states
                .get_mut(STATE_KEY)
                .and_then(|s| s.downcast_mut::<LeafParty>())
                .ok_or_else(|| NnError::BadArgument("this session has no LEAF keys (suite ffn = leaf)".into()))?;
            match (party, weights) {
                (LeafParty::Client(c), _) => c.ffn1(ch, prg, x, rows, in_dim, out_dim).map_err(be),
                (LeafParty::Server(s), Some((w, b))) => s.ffn1(ch, prg, x, w, b, table, rows, in_dim, out_dim).map_err(be),
                (LeafParty::Server(_), None) => Err(NnError::BadArgument("the server must provide W1 and b1".into())),
            }
        }
        None => {
            let (w, b) = weights.ok_or_else(|| NnError::BadArgument("the twin needs the server's weights".into()))?;
            let fmt = LeafFormat::wide().map_err(be)?;
            let xs: Vec<u32> = x.iter().map(|&v| v as u32).collect();
            let y = fmt.twin(table, &xs, w, b, rows, in_dim, out_dim).map_err(be)?;
            Ok(y.into_iter().map(u64::from).collect())
        }
    }
}
