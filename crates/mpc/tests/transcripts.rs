//! Pinned wire formats: for each protocol, a fixed-seed run (IKNP producer, fixed inputs) whose
//! bytes sent in each direction are hashed (session setup included). A change of any hash means
//! the wire format (or the order of OT calls) changed: bump it deliberately, never by accident.

mod common;

use common::*;
use nectar_math::Prg;
use nectar_mpc::Mpc;
use nectar_net::mem::run_pair;
use nectar_net::{Channel, Role};
use nectar_ot::Producer;

fn party(role: Role, c: &mut dyn Channel, op: &str) -> String {
    let mut r = Recording {
        inner: c,
        hash: Default::default(),
    };
    let seed = if role == Role::Server { 1 } else { 2 };
    let mut m = Mpc::setup(role, &mut r, Prg::new([seed; 16]), Producer::Iknp).expect("setup");
    let l = 32;
    let x = bounded(37, l, 20, 40 + seed);
    let b: Vec<bool> = x.iter().map(|v| v & 1 == 1).collect();
    let ch: &mut dyn Channel = &mut r;
    match op {
        "and" => drop(m.and(ch, &b, &b).unwrap()),
        "b2a" => drop(m.b2a(ch, &b, l).unwrap()),
        "mux" => drop(m.mux(ch, &b, &x, l).unwrap()),
        "msb" => drop(m.msb(ch, &x, l).unwrap()),
        "less3" => drop(m.less_than_const(ch, &x, &[1, 2, 3], l, 4).unwrap()),
        "equal" => drop(m.equal_const(ch, &x, &[1, 2], 16).unwrap()),
        "trunc" => drop(m.trunc(ch, &x, l, 12).unwrap()),
        "trunc_approx" => drop(m.trunc_approx(ch, &x, l, 12).unwrap()),
        "trunc_faithful" => drop(m.trunc_faithful(ch, &x, l, 12).unwrap()),
        "extend" => drop(m.extend(ch, &x, l, 64).unwrap()),
        "mul" => drop(m.mul(ch, &x, &x, l).unwrap()),
        "square" => drop(m.square(ch, &x, l).unwrap()),
        "reveal" => drop(m.reveal(ch, &x, l).unwrap()),
        "rotl_lut" => {
            let t: Vec<u64> = (0..16u64).map(|j| j * 0x0123_4567 & 0xffff_ffff).collect();
            drop(m.rotl_lut(ch, &x, l, &[&t], l).unwrap())
        }
        "msb_lut" => {
            m.set_comparison(nectar_mpc::Comparison::RotlLut { block: 4 }).unwrap();
            drop(m.msb(ch, &x, l).unwrap())
        }
        _ => panic!("unknown op {op}"),
    }
    hex(r.hash)
}

fn transcript(op: &'static str) -> String {
    let (a, b) = run_pair(
        move |c| party(Role::Server, c, op),
        move |c| party(Role::Client, c, op),
    );
    format!("{a}/{b}")
}

#[test]
fn pinned_transcripts() {
    // Re-pinned 2026-11-28 (issue 48, the lead): ACOT-based steps (b2a, trunc, extend, mul,
    // mux, and those built on them) are led by the party that sent last, so at a session's
    // start (lead P0) P0 chooses and P1 sends; `mul` runs both cross terms in one direction.
    // Re-pinned 2026-11-29 (issue 48, bytes): `mul`'s COTs have graded widths (bit j over
    // Z_2^(l−j)); `square` pinned from then on.
    let pinned: [(&str, &str); 15] = [
        ("and", "0fb9971f32c87fff/c1f519f4bc45f1a7"),
        ("b2a", "986d0b24773d734a/92714181b077120f"),
        ("mux", "c5145720d165ee58/ab2c82d5081169ce"),
        ("msb", "8622e01dc8f0c602/bef70fe66a2da4aa"),
        ("less3", "038bab16e15174b2/a4d6e577f6f64cc1"),
        ("equal", "dc9a762937b31e75/b0e52db2af5fdf06"),
        ("trunc", "eea8fb6a3993f55a/153b2e8362fd42e4"),
        ("trunc_approx", "cd5a8435a4ada812/3a44d1b16fda3c6e"),
        ("trunc_faithful", "2ecb4979cbff8762/4a675b4ae13af8a7"),
        ("extend", "eea8fb6a3993f55a/3f8c358c4a2b09c1"),
        ("mul", "7c0ef3f4b7680c31/6514c3a98e88dba3"),
        ("square", "716f4ddc8a8822d9/c5f0ec60e4c6847f"),
        ("reveal", "7d13d2a66c2bc098/1d1053af18f33427"),
        ("rotl_lut", "fde4f31bc1af0717/949f72f783a2acee"),
        ("msb_lut", "5d7d5527486097c6/c291a337c67c99dd"),
    ];
    let mut bad = Vec::new();
    for (op, want) in pinned {
        let got = transcript(op);
        println!("(\"{op}\", \"{got}\"),");
        assert_eq!(
            got,
            transcript(op),
            "{op}: transcript is deterministic under fixed seeds"
        );
        if got != want {
            bad.push(op);
        }
    }
    assert!(bad.is_empty(), "transcripts changed: {bad:?}");
}
