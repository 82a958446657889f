//! Prints `nectar_bench::he::bench_he` for the given ring degrees (default 4096, 8192, 16384), one
//! JSON object per line with `--json` (the format `scripts/seal_bench/compare.py` reads),
//! else a table. The CLI equivalent is `nectar bench he --json`.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let mut ns: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    if ns.is_empty() {
        ns = vec![4096, 8192, 16384];
    }
    for n in ns {
        match nectar_bench::he::bench_he(n) {
            Ok(lines) => {
                for l in lines {
                    if json {
                        let bytes = l.bytes.map(|b| format!(",\"bytes\":{b}")).unwrap_or_default();
                        println!(
                            "{{\"impl\":\"nectar\",\"n\":{},\"params\":\"{}\",\"moduli\":\"{}\",\"op\":\"{}\",\"micros\":{:.2},\"cpu_micros\":{:.2},\"threads\":{}{bytes}}}",
                            l.n, l.params, l.moduli, l.op, l.micros, l.cpu_micros, l.threads
                        );
                    } else {
                        println!(
                            "{:>6} {:<14} {:<28} {:<34} {:>10.1} us (cpu {:>10.1}) {:>9} B  threads={}",
                            l.n,
                            l.params,
                            l.moduli,
                            l.op,
                            l.micros,
                            l.cpu_micros,
                            l.bytes.map(|b| b.to_string()).unwrap_or_default(),
                            l.threads
                        );
                    }
                }
            }
            Err(e) => eprintln!("error: {e}"),
        }
    }
}
