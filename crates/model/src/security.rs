//! The security figures of a suite (`nectar params`; issue 18 item 4): every HE parameter set
//! it uses against the 128-bit bound, and every statistically hiding step with its statistical
//! security over a whole session (union bound over everything the session masks).

use crate::secure::backend_opts;
use crate::suite::Suite;
use nectar_nn::secure::{Comparison, MulProtocol};
use nectar_he::params::{SECURITY_TABLE_128, DEFAULT_ERROR_ETA};
use nectar_he::Params;
use nectar_linear::h2a::{
    product_noise_bits, session_security_bits, SESSION_FLOODS_LOG2, SESSION_KEYS_LOG2, STAT_SECURITY_BITS,
};
use serde::Serialize;

/// One HE parameter set of a suite.
#[derive(Clone, Debug, Serialize)]
pub struct HeReport {
    /// What it serves (`olt`, `bole`).
    pub role: &'static str,
    pub n: usize,
    /// `log2(q·P)` (ciphertext primes and special prime).
    pub log_qp: u32,
    /// The largest `log2(q·P)` with 128-bit security at this `N` (HE standard, ternary secret).
    pub max_log_qp_128: u32,
    /// `log2 t` (largest CRT component); for CKKS, `log2 Δ` (the scale).
    pub log_t: u32,
    /// The RLWE error's σ = √(η/2).
    pub error_sigma: f64,
}

/// One statistically hiding step of a suite.
#[derive(Clone, Debug, Serialize)]
pub struct StatReport {
    pub step: &'static str,
    /// Statistical security over a whole session, in bits; `None`: perfectly hiding.
    pub session_bits: Option<u32>,
    pub detail: String,
}

/// The security report of a suite; an error names a planned protocol it cannot assess.
#[derive(Clone, Debug, Serialize)]
pub struct SecurityReport {
    pub suite: String,
    pub he: Vec<HeReport>,
    pub statistical: Vec<StatReport>,
    /// The minimum over the steps (`None`: every step is perfectly hiding).
    pub session_bits: Option<u32>,
}

/// The HE standard's bound on `log2(q·P)` at ring degree `n` (0: no entry).
fn max_log_qp_128(n: usize) -> u32 {
    SECURITY_TABLE_128.iter().find(|(m, _)| *m == n).map_or(0, |x| x.1)
}

fn he_report(role: &'static str, p: &Params) -> HeReport {
    let n = p.n();
    let log_qp = p.q_bits(p.max_level()) + p.special_modulus().map_or(0, |m| m.bits());
    let log_t = (0..p.plain_count())
        .map(|j| 128 - (p.plain_modulus(j) - 1).leading_zeros())
        .max()
        .unwrap_or(0);
    HeReport {
        role,
        n,
        log_qp,
        max_log_qp_128: max_log_qp_128(n),
        log_t,
        error_sigma: (DEFAULT_ERROR_ETA as f64 / 2.0).sqrt(),
    }
}

/// The report of a CKKS parameter set.
fn ckks_report(role: &'static str, p: &nectar_he::ckks::CkksParams) -> HeReport {
    HeReport {
        role,
        n: p.n(),
        log_qp: p.q_bits(p.max_level()) + p.special_prime().map_or(0, |q| 64 - q.leading_zeros()),
        max_log_qp_128: max_log_qp_128(p.n()),
        log_t: p.scale_bits(),
        error_sigma: (DEFAULT_ERROR_ETA as f64 / 2.0).sqrt(),
    }
}

/// The report of `suite` (it must name implemented protocols, [`Suite::validate`]).
pub fn report(suite: &Suite) -> Result<SecurityReport, crate::SuiteError> {
    suite.validate()?;
    let mut he = Vec::new();
    let mut st = Vec::new();
    // OLT runs under every suite: the linear layers with `matmul = olt`, and always the
    // embedding and the heads (BLB's CKKS covers the transformer layers only).
    he.push(he_report("olt", &suite.olt_ring.he_params()));
    st.push(StatReport {
        step: "OLT H2A (coefficient branch)",
        session_bits: None,
        detail: "the masker adds r uniform over all of R_q: the decryptor's view is uniform \
                 (statistical distance 0); the ±1 LSB error is a correctness event"
            .into(),
    });
    // The per-operator CKKS matmuls (`matmul = blb-fused` does its products in its blocks).
    let ckks = Some(nectar_linear::ckks_linear::STATE_KEY);
    let per_op = (suite.matmul.state_key() == ckks || suite.matmul_shared.state_key() == ckks) && !suite.matmul.fused();
    let ckks_err = |e: nectar_linear::LinearError| crate::SuiteError::Syntax(suite.label(), format!("CKKS parameters: {e}"));
    if per_op {
        he.push(ckks_report("ckks", &nectar_linear::ckks_linear::ckks_linear_params().map_err(ckks_err)?));
    }
    if suite.matmul.fused() {
        // The deepest block each Table 6 ring degree takes (set 1: depth 4 at N = 2^14;
        // sets 2-5: up to depth 7 at N = 2^15), plus the level the executor may add
        // (`BlockExec`), at the parameters the blocks run at.
        for (n, depth) in [(1 << 14, 5), (1 << 15, 8)] {
            he.push(ckks_report("ckks-blb", &nectar_linear::layer::blb_fused::executable_params(n, depth).map_err(ckks_err)?));
        }
    }
    if per_op || suite.matmul.fused() {
        st.push(StatReport {
            step: "CKKS <-> MPC conversions (BLB Alg. 1-2)",
            session_bits: None,
            detail: "CKKS -> MPC: the server re-randomises and adds r uniform over all of R_q, so the \
                     client's decryption is uniform (distance 0); MPC -> CKKS: the server sees only \
                     encryptions. The 41-bit slack of the local field <-> ring steps bounds a \
                     correctness event (2^-40 per coefficient), not a leak. The CKKS noise of the \
                     server's product stays inside the shares (no flooding, as in BLB)"
                .into(),
        });
    }
    // What the session's backend runs (the suite's `mul` and `compare` configure it).
    let opts = backend_opts(suite);
    if opts.mul == MulProtocol::Bole {
        let p = Params::bumblebee_bole();
        he.push(he_report("bole", &p));
        let terms = 2;
        st.push(StatReport {
            step: "bOLEe H2A noise flooding (SIMD branch)",
            session_bits: Some(session_security_bits(&p, terms)),
            detail: format!(
                "flood {} bits over a product noise of at most 2^{} ({} terms); at most 2^{} flooded \
                 coefficients per key (enforced) under at most 2^{} keys per session: {} + {} + {} bits",
                nectar_linear::h2a::flood_bits(&p, 0, terms),
                product_noise_bits(&p, 0, terms),
                terms,
                SESSION_FLOODS_LOG2,
                SESSION_KEYS_LOG2,
                STAT_SECURITY_BITS,
                SESSION_FLOODS_LOG2,
                SESSION_KEYS_LOG2
            ),
        });
    } else {
        st.push(StatReport {
            step: "products from OT (Gilboa)",
            session_bits: None,
            detail: "masks are uniform ring elements carried by COTs (perfect in the OT-hybrid model)".into(),
        });
    }
    let lut = matches!(opts.compare, Comparison::RotlLut { .. })
        || [suite.gelu.name(), suite.silu.name(), suite.exp.name(), suite.reciprocal.name(), suite.softmax.name()].contains(&"lut");
    if lut {
        st.push(StatReport {
            step: "ROTL lookups (rotation, opening of i − s)",
            session_bits: None,
            detail: "the opened i − s is uniform in Z_n (s is the sum of the client's uniform one-hot position \
                     and the server's uniform punctured point); the rotated row reaches the server masked by \
                     PRG outputs of the leaf it lacks (computational, half-tree PPRF with TCCR)"
                .into(),
        });
    }
    if suite.ffn == crate::suite::Ffn::Leaf {
        let p = nectar_fhe::LeafFfnParams::wide()
            .map_err(|e| crate::SuiteError::Syntax(suite.label(), format!("LEAF parameters: {e}")))?;
        he.push(he_report("leaf-bfv", &p.bfv));
        let rp = &p.fmt.rp;
        he.push(HeReport {
            role: "leaf-rlwe",
            n: rp.n(),
            log_qp: rp.log_q(),
            max_log_qp_128: max_log_qp_128(rp.n()),
            log_t: rp.p().ilog2(),
            error_sigma: (nectar_fhe::rlwe::RLWE_ERROR_ETA as f64 / 2.0).sqrt(),
        });
        st.push(StatReport {
            step: "LEAF block conversions (nectar_fhe::ffn)",
            session_bits: None,
            detail: "shares -> RLWE: the server sees only RLWE encryptions (seeded a); RLWE -> shares: the \
                     server re-randomises with the client's RLWE public key and adds r uniform over all of \
                     Z_q', so the client's decryption is uniform (distance 0, no flooding needed)"
                .into(),
        });
    }
    let session_bits = st.iter().filter_map(|s| s.session_bits).min();
    Ok(SecurityReport { suite: suite.label(), he, statistical: st, session_bits })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implemented_suites_reach_40_bits_per_session() {
        for spec in ["bumblebee", "east", "bumblebee+mul=ot", "bumblebee+gelu=p4+act-ring=mixed", "bumblebee+matmul=ckks+matmul-shared=ckks", "blb"] {
            let r = report(&Suite::parse(spec).unwrap()).unwrap();
            assert!(r.session_bits.is_none_or(|b| b >= 40), "{spec}: {r:?}");
            for h in &r.he {
                assert!(h.log_qp <= h.max_log_qp_128 && h.error_sigma >= 3.2, "{spec}: {h:?}");
            }
        }
        assert_eq!(report(&Suite::bumblebee()).unwrap().session_bits, Some(40));
        // Per-operator CKKS keeps OLT for the embedding and the heads: both sets are listed.
        let roles: Vec<&str> = report(&Suite::parse("bumblebee+matmul=ckks").unwrap()).unwrap().he.iter().map(|h| h.role).collect();
        assert!(roles.contains(&"olt") && roles.contains(&"ckks"), "{roles:?}");
        let roles: Vec<&str> = report(&Suite::bumblebee()).unwrap().he.iter().map(|h| h.role).collect();
        assert!(!roles.contains(&"ckks"), "{roles:?}");
        // BLB's fused blocks: both ring degrees' deepest sets are listed and within the bound.
        let r = report(&Suite::parse("blb").unwrap()).unwrap();
        let blb: Vec<&HeReport> = r.he.iter().filter(|h| h.role == "ckks-blb").collect();
        assert_eq!(blb.iter().map(|h| h.n).collect::<Vec<_>>(), [1 << 14, 1 << 15]);
        assert!(blb.iter().all(|h| h.log_qp <= h.max_log_qp_128), "{blb:?}");
        assert!(!r.he.iter().any(|h| h.role == "ckks"), "blb has no per-operator CKKS set");
        // LEAF's two rings are listed and within the bound
        let r = report(&Suite::parse("leaf").unwrap()).unwrap();
        let leaf: Vec<&HeReport> = r.he.iter().filter(|h| h.role.starts_with("leaf")).collect();
        assert_eq!(leaf.len(), 2);
        assert!(leaf.iter().all(|h| h.log_qp <= h.max_log_qp_128 && h.max_log_qp_128 > 0), "{leaf:?}");
    }
}
