//! Background preparation of an OLT evaluator's plaintext blocks (issue 17, the server's cache
//! of encoded weights under a memory budget).
//!
//! A server's weight blocks do not depend on the client: their encoding and NTT (about a fifth
//! of a MiniLM inference's CPU time) can run before the weight operator's call. During the MPC
//! operators between two linear layers one of the two cores is mostly idle (both parties'
//! protocol code is single-threaded there), so [`Prefetch::start`] transforms the next weight
//! operator's blocks on a thread of the lowest scheduling class (Linux `SCHED_IDLE`: it runs
//! only on an otherwise idle core, so it does not slow the operators it overlaps), at most
//! `budget` bytes of them; [`Prefetch::finish`] stops it at the call and hands over what is
//! ready ([`crate::olt::olt_prepared`] encodes the rest as usual). Nothing here is sent and
//! nothing depends on the client: the OLT's messages and result are unchanged.

use crate::olt::{prepare_blocks, PreparedBlocks, Side};
use crate::{LinearError, OltPlan};
use nectar_he::Params;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Prepared plaintext blocks of one matrix, being computed or done.
pub struct Prefetch {
    plan: OltPlan,
    side: Side,
    mat: Arc<Vec<u64>>,
    stop: Arc<AtomicBool>,
    job: JoinHandle<Result<PreparedBlocks, LinearError>>,
}

impl Prefetch {
    /// Starts preparing the blocks of `mat` (this party's matrix, [`Side`] `side`, for `plan`)
    /// on a background thread, at most `budget` bytes of them.
    pub fn start(params: &Params, plan: OltPlan, side: Side, mat: Vec<u64>, budget: usize) -> Result<Self, LinearError> {
        let mat = Arc::new(mat);
        let stop = Arc::new(AtomicBool::new(false));
        let (params, m, st) = (params.clone(), Arc::clone(&mat), Arc::clone(&stop));
        let job = std::thread::Builder::new()
            .name("olt-prefetch".into())
            .spawn(move || {
                lowest_priority();
                prepare_blocks(&params, &plan, side, &[m.as_slice()], budget, &st)
            })
            .map_err(|e| LinearError::BadParams(format!("cannot start the prefetch thread: {e}")))?;
        Ok(Prefetch { plan, side, mat, stop, job })
    }

    /// Whether this prefetch is for `mat` under `plan` on `side` (the caller's next OLT).
    pub fn matches(&self, plan: &OltPlan, side: Side, mat: &[u64]) -> bool {
        self.plan == *plan && self.side == side && self.mat.as_slice() == mat
    }

    /// Stops the preparation (it finishes the block in hand) and returns the blocks ready.
    pub fn finish(self) -> Result<PreparedBlocks, LinearError> {
        self.stop.store(true, Ordering::Relaxed);
        self.job
            .join()
            .map_err(|_| LinearError::BadParams("the prefetch thread panicked".into()))?
    }
}

/// Moves the calling thread to the idle scheduling class (Linux; elsewhere it keeps its
/// priority). A failure only costs overlap, never correctness, so it is ignored.
fn lowest_priority() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `sched_setscheduler` on the calling thread (pid 0) with a valid parameter.
        unsafe {
            libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
        }
    }
}
