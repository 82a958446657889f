//! The security figures of a suite (`nectar params`; issue 18 item 4): every HE parameter set
//! it uses against the 128-bit bound, and every statistically hiding step with its statistical
//! security over a whole session (union bound over everything the session masks). The rows are
//! the running protocols' own ([`nectar_math::registry::Protocol::security`]), merged: two
//! protocols over one key set or one conversion state one row.

use crate::{Choice, Suite, SuiteError, Visit};
use nectar_math::registry::{HeRow, Security, StatRow};
use serde::Serialize;

/// The security report of a suite.
#[derive(Clone, Debug, Serialize)]
pub struct SecurityReport {
    pub suite: String,
    pub he: Vec<HeRow>,
    pub statistical: Vec<StatRow>,
    /// The minimum over the steps (`None`: every step is perfectly hiding).
    pub session_bits: Option<u32>,
}

/// The report of `suite` (it must name implemented protocols, [`Suite::validate`]); an error
/// names the protocol whose parameters cannot be assessed.
pub fn report(suite: &Suite) -> Result<SecurityReport, SuiteError> {
    suite.validate()?;
    struct Rows {
        /// `matmul = blb-fused` evaluates the attention products in its own blocks: the
        /// suite's `matmul-shared` does not run.
        fused: bool,
        rows: Security,
        err: Option<SuiteError>,
    }
    impl Visit for Rows {
        fn choice<C: Choice>(&mut self, c: C) {
            if self.err.is_some() || (self.fused && C::OPERATOR == "matmul-shared") {
                return;
            }
            match c.security() {
                Ok(s) => self.rows.merge(s),
                Err(e) => self.err = Some(SuiteError::Syntax(format!("{}={}", C::OPERATOR, c.name()), e)),
            }
        }
    }
    let mut v = Rows { fused: suite.matmul.fused(), rows: Security::default(), err: None };
    suite.visit(&mut v);
    if let Some(e) = v.err {
        return Err(e);
    }
    let Security { he, statistical } = v.rows;
    let session_bits = statistical.iter().filter_map(|s| s.session_bits).min();
    Ok(SecurityReport { suite: suite.label(), he, statistical, session_bits })
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
        let blb: Vec<&HeRow> = r.he.iter().filter(|h| h.role == "ckks-blb").collect();
        assert_eq!(blb.iter().map(|h| h.n).collect::<Vec<_>>(), [1 << 14, 1 << 15]);
        assert!(blb.iter().all(|h| h.log_qp <= h.max_log_qp_128), "{blb:?}");
        assert!(!r.he.iter().any(|h| h.role == "ckks"), "blb has no per-operator CKKS set");
        // Rows come from the protocols that run: OT products name Gilboa, not bOLEe's flooding.
        let r = report(&Suite::parse("bumblebee+mul=ot").unwrap()).unwrap();
        assert!(r.he.iter().all(|h| h.role != "bole") && r.statistical.iter().any(|s| s.step.contains("Gilboa")), "{r:?}");
        assert!(report(&Suite::parse("rotl").unwrap()).unwrap().statistical.iter().any(|s| s.step.starts_with("ROTL")));
        // LEAF's two rings are listed and within the bound
        let r = report(&Suite::parse("leaf").unwrap()).unwrap();
        let leaf: Vec<&HeRow> = r.he.iter().filter(|h| h.role.starts_with("leaf")).collect();
        assert_eq!(leaf.len(), 2);
        assert!(leaf.iter().all(|h| h.log_qp <= h.max_log_qp_128 && h.max_log_qp_128 > 0), "{leaf:?}");
    }
}
