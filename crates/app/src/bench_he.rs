//! `nectar bench he`: per-operation times and ciphertext sizes (issue 4), from
//! `nectar_bench::he::bench_he`. Local operations: no traffic, so the byte fields are 0 and the
//! ciphertext size is reported as `ciphertext_bytes`.

use crate::report::BenchLine;

/// `set`: `seal-default` (per ring degree of `ns`) or `kernels` (issue 50's BFV / CKKS kernels
/// at LEAF's and BLB's sets; `ns` ignored).
pub fn run(ns: &[usize], set: &str) -> Result<Vec<BenchLine>, String> {
    let runs: Vec<Vec<nectar_bench::he::HeBenchLine>> = match set {
        "kernels" => vec![nectar_bench::he::bench_he_kernels().map_err(|e| e.to_string())?],
        "seal-default" => ns.iter().map(|&n| nectar_bench::he::bench_he(n).map_err(|e| e.to_string())).collect::<Result<_, _>>()?,
        _ => return Err(format!("bench he: unknown set {set} (seal-default, kernels)")),
    };
    let mut out = Vec::new();
    for run in runs {
        for h in run {
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
