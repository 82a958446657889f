//! `cargo run --release -p nectar-bench --example bench_ot -- {iknp|ferret|ferret-b11} COUNT`:
//! one JSON line (`ferret` is the b13 set).
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind = match args.get(1).map(String::as_str) {
        Some("iknp") => nectar_bench::ot::OtKind::Iknp,
        Some("ferret-b11") => nectar_bench::ot::OtKind::Ferret(nectar_ot::ferret::FerretParams::b11()),
        _ => nectar_bench::ot::OtKind::Ferret(nectar_ot::ferret::FerretParams::b13()),
    };
    let count = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10_000_000);
    match nectar_bench::ot::bench_ot(kind, count) {
        Ok(b) => println!("{}", serde_json::to_string(&b).unwrap_or_default()),
        Err(e) => eprintln!("bench failed: {e}"),
    }
}
