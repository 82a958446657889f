//! `cargo run --release -p nectar-ot --example aes_speed`: nanoseconds per block of the
//! fixed-key AES on a long slice and in 8-block calls, per GGM PRG parent ([`Crh::prg2`]) and per
//! hashed block ([`Crh::tccr_seq`]), one thread (the figures quoted at `crhash::PIPE`).
//!
//! [`Crh::prg2`]: nectar_ot::crhash::Crh::prg2
//! [`Crh::tccr_seq`]: nectar_ot::crhash::Crh::tccr_seq
fn main() {
    use nectar_ot::crhash::{Crh, FixedAes};
    let a = FixedAes::new([7u8; 16]);
    let mut xs: Vec<u128> = (0..1u128 << 16).collect();
    let t = std::time::Instant::now();
    for _ in 0..200 { a.encrypt(&mut xs); }
    let n = 200.0 * xs.len() as f64;
    println!("slice: {:.2} ns/block", t.elapsed().as_nanos() as f64 / n);
    let mut small = [0u128; 8];
    let t = std::time::Instant::now();
    for i in 0..(1 << 20) { small[0] = i; a.encrypt(&mut small); }
    println!("8-block calls: {:.2} ns/block", t.elapsed().as_nanos() as f64 / (8.0 * (1u64 << 20) as f64));
    let c = Crh::new();
    let par: Vec<u128> = (0..4096u128).collect();
    let mut out = vec![0u128; 8192];
    let t = std::time::Instant::now();
    for _ in 0..1000 { c.prg2(&par, &mut out); }
    println!("prg2: {:.2} ns/parent", t.elapsed().as_nanos() as f64 / (1000.0 * 4096.0));
    let t = std::time::Instant::now();
    for _ in 0..1000 { c.tccr_seq(&mut out, 5); }
    println!("tccr: {:.2} ns/block", t.elapsed().as_nanos() as f64 / (1000.0 * 8192.0));
}
