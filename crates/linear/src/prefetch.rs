//! Background preparation of an OLT evaluator's plaintext blocks (issue 17, the server's cache
//! of encoded weights under a memory budget).
//!
//! A server's weight blocks do not depend on the client: their encoding and NTT (about a fifth
//! of a MiniLM inference's CPU time) can run before the weight operator's call. During the MPC
//! operators between two linear layers one of the two cores is mostly idle (both parties'
//! protocol code is single-threaded there), so [`PrefetchWorker::start`] transforms the next weight
//! operator's blocks on a thread of the lowest scheduling class (Linux `SCHED_IDLE`: it runs
//! only on an otherwise idle core), at most `budget` bytes of them; [`Prefetch::finish`] stops
//! it at the call and hands over what is ready ([`crate::olt::olt_prepared`] encodes the rest as usual). Nothing here is sent and
//! nothing depends on the client: the OLT's messages and result are unchanged.

use crate::olt::{prepare_blocks, PreparedBlocks, Side};
use crate::{LinearError, OltPlan};
use nectar_he::Params;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// One preparation request for the worker thread.
struct Job {
    params: Params,
    plan: OltPlan,
    side: Side,
    mat: Arc<Vec<u64>>,
    budget: usize,
    stop: Arc<AtomicBool>,
    reply: Sender<Result<PreparedBlocks, LinearError>>,
}

/// The thread that prepares blocks, one per session: a persistent thread keeps its allocator
/// heap, so the blocks it allocates reuse the memory of the blocks the previous operator used
/// and freed (a thread per job made every block fault in and zero fresh pages: 0.76 s of the
/// worker's time in MiniLM's GeLU windows).
pub struct PrefetchWorker {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl PrefetchWorker {
    /// Starts the worker thread (at the idle scheduling class, see the module doc).
    pub fn new() -> Result<Self, LinearError> {
        let (tx, rx) = channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("olt-prefetch".into())
            .spawn(move || {
                lowest_priority();
                for job in rx {
                    let out = prepare_blocks(&job.params, &job.plan, job.side, &[job.mat.as_slice()], job.budget, &job.stop);
                    // The requester may be gone (its operator failed): nothing to deliver then.
                    let _ = job.reply.send(out);
                }
            })
            .map_err(|e| LinearError::BadParams(format!("cannot start the prefetch thread: {e}")))?;
        Ok(PrefetchWorker { jobs: Some(tx), thread: Some(thread) })
    }

    /// Starts preparing the blocks of `mat` (this party's matrix, [`Side`] `side`, for `plan`),
    /// at most `budget` bytes of them, after the jobs queued before it.
    pub fn start(&self, params: &Params, plan: OltPlan, side: Side, mat: Arc<Vec<u64>>, budget: usize) -> Result<Prefetch, LinearError> {
        let stop = Arc::new(AtomicBool::new(false));
        let (reply, result) = channel();
        let job = Job { params: params.clone(), plan, side, mat: Arc::clone(&mat), budget, stop: Arc::clone(&stop), reply };
        self.jobs
            .as_ref()
            .and_then(|j| j.send(job).ok())
            .ok_or_else(|| LinearError::BadParams("the prefetch thread has stopped".into()))?;
        Ok(Prefetch { plan, side, mat, stop, result })
    }
}

impl Drop for PrefetchWorker {
    fn drop(&mut self) {
        // Closing the queue ends the thread after its current job.
        drop(self.jobs.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Prepared plaintext blocks of one matrix, being computed or done.
pub struct Prefetch {
    plan: OltPlan,
    side: Side,
    mat: Arc<Vec<u64>>,
    stop: Arc<AtomicBool>,
    result: Receiver<Result<PreparedBlocks, LinearError>>,
}

impl Prefetch {
    /// Whether this prefetch is for `mat` under `plan` on `side` (the caller's next OLT): `mat`
    /// is the very buffer [`PrefetchWorker::start`] was given (same address and length). That
    /// is the same contents: this prefetch holds the buffer's `Arc`, so the buffer lives and
    /// nothing can write it (no `&mut` to an `Arc`'s value while another holder exists).
    /// Comparing the entries instead scanned a decoding step's 106 M weights on the server's
    /// critical path.
    pub fn matches(&self, plan: &OltPlan, side: Side, mat: &[u64]) -> bool {
        self.plan == *plan && self.side == side && std::ptr::eq(self.mat.as_ptr(), mat.as_ptr()) && self.mat.len() == mat.len()
    }

    /// Stops the preparation (it finishes the block in hand) and returns the blocks ready.
    pub fn finish(self) -> Result<PreparedBlocks, LinearError> {
        self.stop.store(true, Ordering::Relaxed);
        self.result.recv().map_err(|_| LinearError::BadParams("the prefetch thread stopped".into()))?
    }
}

impl Drop for Prefetch {
    /// A prefetch never used (its operator failed or did not come) stops at the next block.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Moves the calling thread to the idle scheduling class (Linux; elsewhere it keeps its
/// priority). A failure only costs overlap, never correctness, so it is ignored.
pub(crate) fn lowest_priority() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `sched_setscheduler` on the calling thread (pid 0) with a valid parameter.
        unsafe {
            libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
        }
    }
}
