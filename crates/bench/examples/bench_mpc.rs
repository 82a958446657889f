//! Prints a Markdown table of `bench_mpc` for the named ops:
//! `cargo run --release -p nectar-bench --example bench_mpc -- SIZE [lan|wan|none] OP[:l[:shift]]...`
//! e.g. `... 1048576 none less less3 trunc:32:12`.

use nectar_bench::mpc::{bench_mpc, MpcOp};
use nectar_net::LinkModel;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let size: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(1 << 16);
    let net = args
        .get(1)
        .and_then(|s| LinkModel::parse(s).ok())
        .unwrap_or(None);
    println!("| op | l | shift/k | thresholds | elements | seconds | bytes | bits/element | COTs/element | steady bits/element (measured COT cost) | flows |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for spec in args.iter().skip(2) {
        let mut parts = spec.split(':');
        let name = parts.next().unwrap_or("");
        let Some(mut op) = MpcOp::parse(name) else {
            eprintln!("unknown op {name}");
            continue;
        };
        if let Some(l) = parts.next().and_then(|s| s.parse().ok()) {
            op = op.with_l(l);
        }
        if let Some(s) = parts.next().and_then(|s| s.parse().ok()) {
            op = op.with_shift(s);
        }
        match bench_mpc(op, size, net) {
            Ok(b) => println!(
                "| {name} | {} | {} | {} | {} | {:.3} | {} | {:.1} | {:.1} | {:.1} | {} |",
                op.l,
                op.shift,
                op.thresholds,
                b.size,
                b.seconds,
                b.bytes,
                b.bits_per_element,
                b.cots_per_element,
                b.steady_bits_per_element,
                b.flows
            ),
            Err(e) => eprintln!("{name}: {e}"),
        }
    }
}
