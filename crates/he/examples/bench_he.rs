//! Prints `nectar_he::bench_he` for N = 4096, 8192, 16384 (until the CLI is wired).
fn main() {
    for n in [4096, 8192, 16384] {
        match nectar_he::bench_he(n) {
            Ok(lines) => {
                for l in lines {
                    println!("{:>6} {:<14} {:<28} {:<28} {:>10.1} us {:>9} B  threads={}", l.n, l.params, l.moduli, l.op, l.micros, l.bytes.map(|b| b.to_string()).unwrap_or_default(), l.threads);
                }
            }
            Err(e) => eprintln!("error: {e}"),
        }
    }
}
