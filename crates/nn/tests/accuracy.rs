//! Accuracy of every operator: f64 reference vs the plaintext twin, over the documented ranges.

use nectar_math::FixedPoint;
use nectar_nn::accuracy::{grid, measure_elementwise};
use nectar_nn::backend::Backend;
use nectar_nn::{exp, gelu, silu, PlainBackend};

const FP: FixedPoint = FixedPoint::BUMBLEBEE;

#[test]
fn seg4_gelu_accuracy() {
    let xs = grid(-5.0, 3.0, 8001);
    let s = measure_elementwise("seg4", FP, &xs, |b, x| gelu::seg4_gelu(b, x, &gelu::SEG4_BUMBLEBEE), gelu::gelu_f64, "").unwrap();
    println!("{s:?}");
    let s2 = measure_elementwise("seg4 vs approx", FP, &xs, |b, x| gelu::seg4_gelu(b, x, &gelu::SEG4_BUMBLEBEE), |x| gelu::seg4_f64(x, &gelu::SEG4_BUMBLEBEE), "").unwrap();
    println!("{s2:?}");
    let s3 = measure_elementwise("seg4 mixed", FP, &xs, |b, x| gelu::seg4_gelu_mixed(b, x, &gelu::SEG4_BUMBLEBEE), gelu::gelu_f64, "").unwrap();
    println!("{s3:?}");
    let s4 = measure_elementwise("p4", FP, &xs, |b, x| gelu::p4_gelu(b, x, &gelu::P4_BOLT), gelu::gelu_f64, "").unwrap();
    println!("{s4:?}");
    let s5 = measure_elementwise("p4 mixed", FP, &xs, |b, x| gelu::p4_gelu_mixed(b, x, &gelu::P4_BOLT), gelu::gelu_f64, "").unwrap();
    println!("{s5:?}");
    let xs = grid(-8.0, 8.0, 8001);
    let s6 = measure_elementwise("silu", FP, &xs, |b, x| silu::silu(b, x, &silu::SILU_BUMBLEBEE), silu::silu_f64, "").unwrap();
    println!("{s6:?}");
    let s7 = measure_elementwise("silu mixed", FP, &xs, |b, x| silu::silu_mixed(b, x, &silu::SILU_BUMBLEBEE), silu::silu_f64, "").unwrap();
    println!("{s7:?}");
    let xs = grid(-14.0, 0.0, 8001);
    let s8 = measure_elementwise("exp", FP, &xs, |b, x| exp::exp_neg(b, x, &exp::EXP_BUMBLEBEE), f64::exp, "").unwrap();
    println!("{s8:?}");
    let s9 = measure_elementwise("exp mixed", FP, &xs, |b, x| exp::exp_neg_mixed(b, x, &exp::EXP_BUMBLEBEE), f64::exp, "").unwrap();
    println!("{s9:?}");
    let _ = PlainBackend::new(FP).unwrap().format();
}
