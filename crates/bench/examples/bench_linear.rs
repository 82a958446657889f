//! `cargo run --release -p nectar-bench --example bench_linear -- op k,m,n variant net [heads] [model]`
//! (`model`: a `CostModel::by_name` name for the window chooser, default `artifact`).
use nectar_bench::linear::{
    bench_compression, bench_linear, measure_automorphism_seconds, LinearBenchSpec, Op,
};
use nectar_linear::window::Compression;
use nectar_linear::{CostModel, OltPlan, Shape, Variant, Windows};
use nectar_net::LinkModel;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a[1] == "pc" {
        println!("automorphism seconds {:?}", measure_automorphism_seconds());
        return;
    }
    if a[1] == "compress" {
        let s: Vec<usize> = a[2].split(',').map(|x| x.parse().unwrap()).collect();
        let shape = Shape::new(s[0], s[1], s[2]).unwrap();
        let w = Windows::new(s[3], s[4], s[5], 8192, true).unwrap();
        let c = if a[3] == "pack" {
            Compression::PackLwes
        } else {
            Compression::Interleave
        };
        println!("{:?}", bench_compression(shape, w, c));
        return;
    }
    let shape: Vec<usize> = a[2].split(',').map(|x| x.parse().unwrap()).collect();
    let variant = Variant::parse(&a[3]).unwrap();
    let windows = a.get(6).map(|name| {
        let c = CostModel::by_name(name).expect("cost model name");
        let sh = Shape::new(shape[0], shape[1], shape[2]).unwrap();
        OltPlan::choose(sh, 8192, variant, &c).unwrap().windows
    });
    let spec = LinearBenchSpec {
        op: Op::parse(&a[1]).unwrap(),
        shape,
        heads: a.get(5).map_or(1, |h| h.parse().unwrap()),
        variant,
        net: LinkModel::parse(&a[4]).unwrap(),
        windows,
        l: 64,
        verify: true,
        narrow: false,
    };
    println!("{:?}", bench_linear(&spec));
}
