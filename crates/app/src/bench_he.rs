//! `nectar bench he`: per-operation times and ciphertext sizes (issue 4), from
//! `nectar_bench::he::bench_he`. Local operations: no traffic, so the byte fields are 0 and the
//! ciphertext size is reported as `ciphertext_bytes`.

use crate::report::BenchLine;

pub fn run(ns: &[usize]) -> Result<Vec<BenchLine>, String> {
    let mut out = Vec::new();
    for &n in ns {
        for h in nectar_bench::he::bench_he(n).map_err(|e| e.to_string())? {
            let mut l = BenchLine::new("he", &h.op)
                .param("n", h.n)
                .param("set", h.params.clone())
                .param("moduli", h.moduli.clone())
                .param("threads", h.threads)
                .seconds(h.micros / 1e6)
                .extra("micros", h.micros)
                .extra("cpu_micros", h.cpu_micros);
            if let Some(b) = h.bytes {
                l = l.extra("ciphertext_bytes", b);
            }
            out.push(l);
        }
    }
    Ok(out)
}
