//! `--insecure-test-seed`: every random value of a party derived from a public seed, so that two
//! runs with the same seeds are bit-for-bit equal (the Python binding's output against the CLI's,
//! a regression found on one run replayed on the next).
//!
//! SECURITY: a party seeded this way has NO privacy: anyone who knows the seed recomputes its
//! shares, masks, OT choices and HE secret key. It exists for tests only; it is never read from an
//! environment variable (only from an explicit flag or keyword), and every use prints a warning on
//! stderr. Without a seed every session draws its own from the operating system
//! ([`Prg::from_entropy`]).

use nectar_math::Prg;
use nectar_net::Role;

/// The warning printed once per process that uses a test seed.
pub const WARNING: &str = "warning: --insecure-test-seed is set: this party's randomness (shares, masks, keys) is \
derived from a public seed and it has NO privacy; use it for tests only";

/// Prints [`WARNING`] on stderr when `seed` is set.
pub fn warn(seed: Option<u64>) {
    if seed.is_some() {
        eprintln!("{WARNING}");
    }
}

/// The generator of `role`'s session number `session` (counted from 0 by each server; a client
/// runs one session): fresh entropy without a seed, else a key derived from
/// (seed, role, session), so the two parties and a server's successive sessions never share a
/// stream.
pub fn session_prg(seed: Option<u64>, role: Role, session: u64) -> Prg {
    let Some(seed) = seed else {
        return Prg::from_entropy();
    };
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    // The role and session occupy disjoint bytes; the derived key is one AES-CTR output
    // under that key, so structured inputs do not become structured keys.
    key[8] = match role {
        Role::Server => 1,
        Role::Client => 2,
    };
    key[9..16].copy_from_slice(&session.to_le_bytes()[..7]);
    Prg::new(key).fork()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_streams_are_reproducible_and_separated() {
        let draw = |s, r, i| session_prg(Some(s), r, i).next_u128();
        assert_eq!(draw(7, Role::Client, 0), draw(7, Role::Client, 0));
        assert_ne!(draw(7, Role::Client, 0), draw(7, Role::Server, 0));
        assert_ne!(draw(7, Role::Server, 0), draw(7, Role::Server, 1));
        assert_ne!(draw(7, Role::Client, 0), draw(8, Role::Client, 0));
        assert_ne!(session_prg(None, Role::Client, 0).next_u128(), session_prg(None, Role::Client, 0).next_u128());
    }
}
