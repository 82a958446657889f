//! The allocator's policy for freed memory (the `nectar` binary runs on mimalloc, see
//! `src/main.rs`): keep freed pages briefly for reuse while a session runs, hand them back to
//! the operating system when a session ends.

/// `mi_option_purge_delay` in mimalloc v3's `mi_option_e` (include/mimalloc.h; the Rust
/// bindings name no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// `mi_option_purge_decommits` (same enum): 1 = a purge decommits (`MADV_DONTNEED` on Linux),
/// 0 = it only resets (`MADV_FREE`).
const MI_OPTION_PURGE_DECOMMITS: libmimalloc_sys::mi_option_t = 5;

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

/// Sets the purge delay ([`PURGE_DELAY_MS`]), makes purges reset pages instead of decommitting
/// them, and turns transparent huge pages off for this process (and the children it spawns);
/// called once at start by the binary.
///
/// Even with the 2 s delay, a MiniLM session purged about 3 GB in 3.7k `MADV_DONTNEED` calls
/// (`strace -f`, both parties), and each page touched again afterwards was faulted in and
/// zeroed by the kernel: 13 % of all CPU samples were `clear_page_erms`, mostly 2 MB huge pages
/// (mimalloc asks for them on its 1 GiB arenas) zeroed whole for a few KB used. With
/// `MADV_FREE` a page reused before the kernel reclaims it is neither faulted nor zeroed, and
/// without huge pages a fault zeroes 4 KB. MiniLM 32 tokens over the simulated LAN, one run
/// each in a row (env-var equivalents of the two options): 24.7 s, 6.8 s system time before;
/// 23.4 s / 3.6 s with resets alone; 22.6 s / 2.9 s without huge pages alone; 21.9 s / 1.9 s
/// with both; user time unchanged (35 s), peak RSS 850 / 511 MB → 888 / 544 MB (server /
/// client). Freed-but-reset pages count in RSS until the kernel needs them back, which is why
/// [`release_freed_memory`] decommits for real.
pub fn keep_freed_memory_briefly() {
    // SAFETY: sets process-wide allocator options; no memory is touched.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS as _);
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DECOMMITS, 0);
    }
    // SAFETY: PR_SET_THP_DISABLE takes plain integer arguments and only sets a flag of this
    // process's memory map (inherited by children); a kernel without it returns an error,
    // which leaves huge pages as they were.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
}

/// Returns the freed memory of this thread and of every rayon worker to the operating system
/// now. mimalloc purges only on allocator calls, so without this an idle server keeps what
/// its last session freed (idle after three MiniLM sessions: 458 MB resident with a 100 ms
/// delay alone, 25 MB with this call at the end of each session, 43 MB with the former delay
/// 0). Harmless under another allocator.
///
/// Purges decommit during the call (they only reset while sessions run, see
/// [`keep_freed_memory_briefly`]), so that the pages leave the resident set now.
pub fn release_freed_memory() {
    // SAFETY: the options are process-wide atomics; `mi_collect` only frees memory mimalloc
    // itself holds unused. A session running meanwhile decommits instead of resetting, which
    // only costs it faults.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DECOMMITS, 1) };
    rayon::broadcast(|_| unsafe { libmimalloc_sys::mi_collect(true) });
    unsafe {
        libmimalloc_sys::mi_collect(true);
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DECOMMITS, 0);
    }
}
