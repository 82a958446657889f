//! The committed East OPPE tables (`crates/nn/data/east/*.json`) are what their recorded fit
//! command produces, and their recorded error figures (f64 and fixed-point twin) still hold.

use nectar_nn::fit::{fit, measure, spec_of, Func};
use nectar_nn::oppe::{east_table, EAST_TABLES};
use nectar_math::FixedPoint;

#[test]
fn committed_tables_are_reproduced_by_their_fit() {
    for name in EAST_TABLES {
        let t = east_table(name).unwrap();
        let again = fit(&spec_of(t).unwrap()).unwrap();
        assert_eq!(again.breaks.len(), t.breaks.len(), "{name}");
        for (a, b) in again.breaks.iter().zip(&t.breaks) {
            assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{name}: breakpoint {a} vs committed {b}");
        }
        for (pa, pb) in again.coeffs.iter().zip(&t.coeffs) {
            for (a, b) in pa.iter().zip(pb) {
                assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{name}: coefficient {a} vs committed {b}");
            }
        }
        assert_eq!(again.fit.command, t.fit.command, "{name}");
    }
}

#[test]
fn recorded_errors_hold() {
    for name in EAST_TABLES {
        let t = east_table(name).unwrap();
        let fp = FixedPoint::new(t.fit.format[0], t.fit.format[1]).unwrap();
        let m = measure(t, Func::parse(name).unwrap(), fp, t.fit.samples).unwrap();
        for (what, got, rec) in [
            ("f64 max", m.float_max_abs, t.fit.float_max_abs),
            ("f64 mean", m.float_mean_abs, t.fit.float_mean_abs),
            ("twin max", m.twin_max_abs, t.fit.twin_max_abs),
            ("twin mean", m.twin_mean_abs, t.fit.twin_mean_abs),
        ] {
            assert!((got - rec).abs() <= 1e-9 * rec.max(1e-12), "{name} {what}: measured {got:e}, recorded {rec:e}");
        }
        println!("{name}: f64 max {:.3e} mean {:.3e}; twin max {:.3e} mean {:.3e}", m.float_max_abs, m.float_mean_abs, m.twin_max_abs, m.twin_mean_abs);
    }
}

/// East §5 bounds: our tables must beat BumbleBee's approximations where they replace them
/// (Seg4 GeLU 3.3e-2, SiLU 7.2e-2, Taylor exp 5e-3 on the same ranges).
#[test]
fn tables_are_accurate() {
    let bound = |name: &str| match name {
        "gelu" | "gelu_tanh" => 5e-4,
        "exp" => 5e-5,
        "tanh" => 1e-3,
        "silu" => 1e-3,
        _ => unreachable!(),
    };
    for name in EAST_TABLES {
        let t = east_table(name).unwrap();
        assert!(t.fit.twin_max_abs <= bound(name), "{name}: twin max error {:e}", t.fit.twin_max_abs);
        assert!(t.fit.float_max_abs <= bound(name), "{name}: f64 max error {:e}", t.fit.float_max_abs);
    }
}
