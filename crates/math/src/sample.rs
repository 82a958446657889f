//! Samplers over the [`Prg`]: uniform below a bound, ternary and centred-binomial noise.
//!
//! All samplers are constant-time in the sampled value except [`uniform_below`], whose
//! rejection loop leaks only how many draws were rejected, which is independent of the output.

use crate::Prg;
use rand_core::RngCore;

/// Uniform in `[0, q)` by rejection sampling on the smallest covering power of two.
pub fn uniform_below(prg: &mut Prg, q: u64) -> u64 {
    assert!(q > 0, "uniform_below(0)");
    if q.is_power_of_two() {
        return prg.next_u64() & (q - 1);
    }
    let mask = u64::MAX >> (q - 1).leading_zeros();
    loop {
        let v = prg.next_u64() & mask;
        if v < q {
            return v;
        }
    }
}

/// Uniform in `{-1, 0, 1}` (as `i8`), for ternary RLWE secrets.
pub fn ternary(prg: &mut Prg) -> i8 {
    // Rejection on 2 bits: 0,1,2 -> -1,0,1; 3 rejected.
    loop {
        let v = (prg.next_u32() & 3) as i8;
        if v < 3 {
            return v - 1;
        }
    }
}

/// Centred binomial with parameter `eta`: `sum(a_i) - sum(b_i)` for `2*eta` random bits;
/// variance `eta/2`. `eta = 21` gives `sigma ~ 3.24`, the RLWE error width of the HE standard.
pub fn centered_binomial(prg: &mut Prg, eta: u32) -> i64 {
    assert!(eta <= 64, "eta <= 64");
    let m = if eta == 64 { u64::MAX } else { (1u64 << eta) - 1 };
    let a = (prg.next_u64() & m).count_ones() as i64;
    let b = (prg.next_u64() & m).count_ones() as i64;
    a - b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_below_in_range_and_spread() {
        let mut p = Prg::new([5; 16]);
        let mut hist = [0u32; 7];
        for _ in 0..70_000 {
            let v = uniform_below(&mut p, 7);
            hist[v as usize] += 1;
        }
        for h in hist {
            assert!((9_000..11_000).contains(&h), "{hist:?}");
        }
        assert!((0..1000).all(|_| uniform_below(&mut p, (1 << 59) - 55) < (1 << 59) - 55));
    }

    #[test]
    fn ternary_balanced() {
        let mut p = Prg::new([6; 16]);
        let mut c = [0i32; 3];
        for _ in 0..30_000 {
            c[(ternary(&mut p) + 1) as usize] += 1;
        }
        for x in c {
            assert!((9_300..10_700).contains(&x), "{c:?}");
        }
    }

    #[test]
    fn cbd_moments() {
        let mut p = Prg::new([8; 16]);
        let n = 100_000;
        let xs: Vec<i64> = (0..n).map(|_| centered_binomial(&mut p, 21)).collect();
        let mean = xs.iter().sum::<i64>() as f64 / n as f64;
        let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.05);
        assert!((var - 10.5).abs() < 0.3, "{var}");
        assert!(xs.iter().all(|x| x.abs() <= 21));
    }
}
