//! Per-session HE key material of one party: its own secret key, the peer's public key and (for
//! OLT's compression) the peer's Galois keys. Both parties generate a key pair, so either can be
//! the encrypting side of an OLT (role flip, BumbleBee Alg. 1).
//!
//! Setup cost: one flight each way (server first, so that two large sends never block each
//! other on a socket): a public key and, when `galois` is set, the Galois keys of the elements
//! `2^i + 1` (InterLeave and PackLWEs).

use crate::wire;
use crate::LinearError;
use nectar_he::keys::interleave_galois_elements;
use nectar_he::{GaloisKeys, Params, PublicKey, SecretKey};
use nectar_math::Prg;
use nectar_net::{Channel, Role};

/// One party's HE key material for a session (AGREEMENT: both parties use the same `params`).
pub struct HeSession {
    pub params: Params,
    pub(crate) sk: SecretKey,
    pub(crate) peer_pk: PublicKey,
    pub(crate) peer_gk: Option<GaloisKeys>,
    /// Coefficients this party has noise-flooded under the peer's key so far (the session's
    /// statistical-security budget, [`crate::h2a::SESSION_FLOODS_LOG2`]).
    pub(crate) flooded: std::sync::atomic::AtomicU64,
}

impl HeSession {
    /// Generates this party's keys and exchanges public (and Galois) keys with the peer.
    pub fn setup<C: Channel + ?Sized>(
        ch: &mut C,
        role: Role,
        params: Params,
        galois: bool,
        prg: &mut Prg,
    ) -> Result<Self, LinearError> {
        let sk = SecretKey::generate(&params, prg);
        let pk = sk.public_key(&params, prg);
        let gk = if galois {
            Some(sk.galois_keys(&params, &interleave_galois_elements(params.n()), prg)?)
        } else {
            None
        };
        let mine = wire::keys_to_bytes(&params, &pk, gk.as_ref())?;
        let theirs = match role {
            Role::Server => {
                ch.send(&mine)?;
                ch.recv()?
            }
            Role::Client => {
                let t = ch.recv()?;
                ch.send(&mine)?;
                ch.flush()?;
                t
            }
        };
        let (peer_pk, peer_gk) = wire::keys_from_bytes(&params, &theirs)?;
        if galois && peer_gk.is_none() {
            return Err(LinearError::Malformed("peer sent no Galois keys".into()));
        }
        Ok(HeSession {
            params,
            sk,
            peer_pk,
            peer_gk,
            flooded: Default::default(),
        })
    }

    /// One-way key exchange for protocols where only the server's key encrypts (COP,
    /// [`crate::cop`]): the server generates its key pair and Galois keys and sends the public
    /// and Galois keys (one flight); the client keeps them and holds a secret key of its own
    /// that nothing uses and that never leaves it. The server's `peer_pk` is its own public key
    /// (it masks nothing under the client's key), and it holds no peer Galois keys.
    pub fn setup_server_key<C: Channel + ?Sized>(ch: &mut C, role: Role, params: Params, prg: &mut Prg) -> Result<Self, LinearError> {
        let sk = SecretKey::generate(&params, prg);
        match role {
            Role::Server => {
                let pk = sk.public_key(&params, prg);
                let gk = sk.galois_keys(&params, &interleave_galois_elements(params.n()), prg)?;
                ch.send(&wire::keys_to_bytes(&params, &pk, Some(&gk))?)?;
                ch.flush()?;
                Ok(HeSession { params, sk, peer_pk: pk, peer_gk: None, flooded: Default::default() })
            }
            Role::Client => {
                let (peer_pk, peer_gk) = wire::keys_from_bytes(&params, &ch.recv()?)?;
                if peer_gk.is_none() {
                    return Err(LinearError::Malformed("the server sent no Galois keys".into()));
                }
                Ok(HeSession { params, sk, peer_pk, peer_gk, flooded: Default::default() })
            }
        }
    }

    /// A session from key material exchanged elsewhere (e.g. by the application's handshake).
    pub fn from_keys(
        params: Params,
        sk: SecretKey,
        peer_pk: PublicKey,
        peer_gk: Option<GaloisKeys>,
    ) -> Self {
        HeSession {
            params,
            sk,
            peer_pk,
            peer_gk,
            flooded: Default::default(),
        }
    }

    /// Coefficients noise-flooded by this party in this session so far.
    pub fn flooded(&self) -> u64 {
        self.flooded.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Ring degree `N`.
    pub fn degree(&self) -> usize {
        self.params.n()
    }
}
