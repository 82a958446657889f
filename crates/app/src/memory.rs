//! The allocator's policy for freed memory (the `nectar` binary runs on mimalloc, see
//! `src/main.rs`): keep freed pages briefly for reuse while a session runs, hand them back to
//! the operating system when a session ends.

/// `mi_option_purge_delay` in mimalloc v3's `mi_option_e` (include/mimalloc.h; the Rust
/// bindings name no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Milliseconds a freed page stays mapped for reuse. A session frees and allocates
/// ciphertext- and extension-sized buffers many times a second; purging each one at once
/// (delay 0, this binary's former setting) made every allocation fault in and zero fresh pages:
/// MiniLM 32 tokens over the simulated LAN spent 4.9–7.5 s of system time per run, 3.4–3.6 s
/// with 100 ms, for +8 MB of peak RSS (2-core VM, `nectar bench suites`). At 100 ms the
/// kernel still zeroed huge pages for 7 % of the run's CPU samples (buffers freed between two
/// layers' operators wait longer than that); 2 s took the run from 22.5–23.2 s to 19.7–21.2 s
/// (A/B, alternating) and its system time from 3.0–4.1 s to 1.3–2.4 s, for +40 MB of the
/// server's peak RSS (551 MB); never purging (−1) gained nothing more and kept +70 MB.
pub const PURGE_DELAY_MS: i64 = 2000;

/// Sets the purge delay ([`PURGE_DELAY_MS`]); called once at start by the binary.
pub fn keep_freed_memory_briefly() {
    // SAFETY: sets a process-wide allocator option; no memory is touched.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS as _) };
}

/// Returns the freed memory of this thread and of every rayon worker to the operating system
/// now. mimalloc purges only on allocator calls, so without this an idle server keeps what
/// its last session freed (idle after three MiniLM sessions: 458 MB resident with a 100 ms
/// delay alone, 25 MB with this call at the end of each session, 43 MB with the former delay
/// 0). Harmless under another allocator.
pub fn release_freed_memory() {
    // SAFETY: `mi_collect` only frees memory mimalloc itself holds unused.
    rayon::broadcast(|_| unsafe { libmimalloc_sys::mi_collect(true) });
    unsafe { libmimalloc_sys::mi_collect(true) };
}
