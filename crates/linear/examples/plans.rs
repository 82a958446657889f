//! Prints the chooser's plans and predicted bytes for the paper's shapes.
use nectar_linear::*;
fn main() {
    let c = CostModel::default();
    for &(k, m, n) in &[
        (1usize, 50257usize, 768usize),
        (128, 768, 768),
        (16, 768, 3072),
        (16, 768, 768),
    ] {
        for v in [Variant::Krdy, Variant::KrdyPlus, Variant::Interleave] {
            let p = OltPlan::choose(Shape::new(k, m, n).unwrap(), 8192, v, &c).unwrap();
            println!(
                "{:?} {:?} {:?} sent {} ret {} autos {} flip {} comp {:?}",
                (k, m, n),
                v,
                p.windows,
                p.sent_cts,
                p.returned_cts,
                p.autos,
                p.rhs_encrypts,
                p.compression
            );
        }
    }
}
