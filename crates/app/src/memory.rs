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

/// Sets the purge delay ([`PURGE_DELAY_MS`]) and turns transparent huge pages off for this
/// process (and the children it spawns); called once at start by the binary.
///
/// Even with the 2 s delay, a MiniLM session purged about 3 GB in 3.7k `MADV_DONTNEED` calls
/// (`strace -f`, both parties), and each purged page touched again was faulted in and zeroed
/// by the kernel: 13 % of all CPU samples were `clear_page_erms`, mostly 2 MB huge pages
/// (mimalloc asks for them on its 1 GiB arenas) zeroed whole for a few KB used. Without huge
/// pages a fault zeroes 4 KB. MiniLM 32 tokens over the simulated LAN (`nectar bench suites`,
/// 2-core VM, one run each, the same binary with mimalloc's environment options): 24.7 s with
/// 6.8 s of system time as it was; 22.6 s / 2.9 s without huge pages; 23.4 s / 3.6 s with
/// purges that only reset pages (`MADV_FREE`, `purge_decommits = 0`); 21.9 s / 1.9 s with
/// both; user time 35 s throughout. Resets are not used: their pages stay resident until the
/// kernel wants them back (an idle server kept 167 MB after three sessions), for 0.1–0.4 s
/// (with this `prctl`: 21.75 / 21.76 s against 21.67 / 21.37 s with resets; peak RSS 831–845 /
/// 506–514 MB against 855–888 / 540–545 MB, server / client).
pub fn keep_freed_memory_briefly() {
    // SAFETY: sets a process-wide allocator option; no memory is touched.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS as _) };
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
pub fn release_freed_memory() {
    // SAFETY: `mi_collect` only frees memory mimalloc itself holds unused.
    rayon::broadcast(|_| unsafe { libmimalloc_sys::mi_collect(true) });
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// Resident memory of this process in bytes (`/proc/self/statm`; `None` where it cannot be
/// read, e.g. off Linux).
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (page > 0).then(|| pages * page as u64)
}
