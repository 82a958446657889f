//! Manual measurements of [`nectar_nn::bench::bench_secure`] (ignored; large sizes):
//! `NN_OP=gelu-mixed NN_SIZE=65536 NN_COLS=1 NN_VARIANT=bole NN_NET=none \
//!  cargo test -p nectar-nn --test secure_bench -- --ignored --nocapture`

#[test]
#[ignore]
fn bench_from_env() {
    let get = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let op = get("NN_OP", "gelu-mixed");
    let size: usize = get("NN_SIZE", "4096").parse().unwrap();
    let cols: usize = get("NN_COLS", "1").parse().unwrap();
    let variant = get("NN_VARIANT", "bole");
    let net = nectar_net::LinkModel::preset(&get("NN_NET", "none")).expect("net: lan, wan or none");
    let r = nectar_nn::bench::bench_secure(&op, size, cols, &variant, net).unwrap();
    println!("{r:#?}");
    println!(
        "RESULT op={} n={} cols={} variant={} net={} s={:.3} MB_total={:.3} MB_p0={:.3} MB_p1={:.3} rounds={} bits/el={:.1} amortised_bits/el={:.1} cots/el={:.1} setup_s={:.2} lsb={}",
        r.op,
        r.elements,
        r.cols,
        r.variant,
        r.net,
        r.seconds,
        r.bytes_total as f64 / 1e6,
        r.bytes_p0 as f64 / 1e6,
        r.bytes_p1 as f64 / 1e6,
        r.rounds,
        r.bits_per_element,
        r.amortised_bits_per_element,
        r.cots_per_element,
        r.setup_seconds,
        r.max_lsb_vs_twin
    );
}
