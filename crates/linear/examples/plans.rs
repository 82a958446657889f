//! Prints the chooser's plans for the paper's shapes, with the artifact's prices and with
//! prices measured on this machine (P_C = automorphism seconds, P_B = response bytes / link).
use nectar_linear::*;
fn main() {
    let pc: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0022);
    let models = [
        ("artifact", CostModel::default()),
        (
            "measured-LAN",
            CostModel::measured(pc, pc / 40.0, 233_487, 1e9),
        ),
        ("lan_commodity", CostModel::lan_commodity()),
        (
            "measured-WAN",
            CostModel::measured(pc, pc / 40.0, 233_487, 400e6),
        ),
    ];
    for &(k, m, n) in &[
        (1usize, 50257usize, 768usize),
        (128, 768, 768),
        (16, 768, 3072),
        (16, 768, 768),
        (8, 1536, 384),
        (16, 3072, 768),
        (16, 30522, 384),
    ] {
        for v in [Variant::Krdy, Variant::KrdyPlus, Variant::Interleave] {
            for (name, c) in &models {
                if *name != "artifact" && v != Variant::Interleave {
                    continue;
                }
                let p = OltPlan::choose(Shape::new(k, m, n).unwrap(), 8192, v, c).unwrap();
                println!(
                    "{:?} {:?} [{name}] {:?} sent {} ret {} autos {} mults {} encodes {} flip {} comp {:?}",
                    (k, m, n),
                    v,
                    p.windows,
                    p.sent_cts,
                    p.returned_cts,
                    p.autos,
                    p.mults,
                    p.encodes(),
                    p.rhs_encrypts,
                    p.compression
                );
            }
        }
    }
}
