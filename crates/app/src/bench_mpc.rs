//! `nectar bench mpc`: lookup-table protocols split into preprocessing and online (ROTL §VII-C
//! Fig. 14 setting: `--op lut --n 256 --bits 64 --count 100000`; FLUTE+ `--op flute`) and the
//! comparison from LUTs (`--op msb --block B`, ROTL §VI), from `nectar_bench::lut` and
//! `nectar_bench::flute`. One JSON line per run: `bytes_total`, `count`, `prepro_bytes`,
//! `online_bytes`, `prepro_seconds`, `online_seconds`, per-lookup figures.

use crate::report::BenchLine;
use nectar_bench::flute::bench_flute;
use nectar_bench::lut::{bench_lut, LutOp};
use nectar_net::LinkModel;

pub struct Args<'a> {
    pub op: &'a str,
    pub n: usize,
    pub bits: u32,
    pub count: usize,
    pub block: u32,
    pub net: &'a str,
}

/// Every field of a bench result as extras of one line (the common fields filled in).
fn line(op: &str, protocol: &str, v: serde_json::Value, seconds: f64, bytes: u64) -> BenchLine {
    let mut l = BenchLine::new("mpc", &format!("{op}/{protocol}")).seconds(seconds);
    l.bytes_total = bytes;
    if let serde_json::Value::Object(m) = v {
        for (k, x) in m {
            if k != "seconds" && k != "bytes_total" {
                l = l.extra(&k, x);
            }
        }
    }
    l
}

fn ser<T: serde::Serialize>(v: &T) -> Result<serde_json::Value, String> {
    serde_json::to_value(v).map_err(|e| e.to_string())
}

pub fn run(a: &Args) -> Result<BenchLine, String> {
    let net = LinkModel::parse(a.net).map_err(|e| format!("--net: {e}"))?;
    match a.op {
        "lut" => {
            let b = bench_lut(LutOp::Lut { n: a.n }, a.bits, a.count, net).map_err(|e| e.to_string())?;
            Ok(line("lut", "rotl", ser(&b)?, b.seconds, b.bytes_total))
        }
        "msb" => {
            let b = bench_lut(LutOp::Msb { block: a.block }, a.bits, a.count, net).map_err(|e| e.to_string())?;
            Ok(line("msb", "rotl-lut", ser(&b)?, b.seconds, b.bytes_total))
        }
        "flute" => {
            let b = bench_flute(a.n, a.bits, a.count, net).map_err(|e| e.to_string())?;
            Ok(line("flute", "flute+", ser(&b)?, b.seconds, b.bytes_total))
        }
        other => Err(format!(
            "bench mpc --op {other}: one of lut, flute, msb (the other share-level protocols are under `nectar bench nn --op`)"
        )),
    }
}
