use nectar_ot::crhash::Crh;
use nectar_ot::lpn::LocalCode;
use std::time::Instant;
fn main() {
    let crh = Crh::new();
    let n = 10_485_760usize;
    let mut out = vec![0u128; n];
    let mut scratch = Vec::new();
    let t = Instant::now();
    for (j, leaves) in out.chunks_exact_mut(1 << 13).enumerate() {
        nectar_ot::ggm::expand(&crh, j as u128 * 77 + 1, 13, leaves, &mut scratch);
    }
    println!("ggm {:?}", t.elapsed());
    let seed: Vec<u128> = (0..452_000u128).map(|i| i * 0x1234567).collect();
    let t = Instant::now();
    LocalCode::new(452_000).encode(&mut out, &seed);
    println!("lpn {:?}", t.elapsed());
    let t = Instant::now();
    crh.tccr_seq(&mut out, 5);
    println!("tccr {:?}", t.elapsed());
}
