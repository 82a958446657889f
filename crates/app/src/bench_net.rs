//! `nectar bench net`: what the transport achieves — raw in-memory and loopback-TCP throughput,
//! and the simulated LAN/WAN links' effective bandwidth and round-trip time against their
//! targets (BumbleBee §VII). The transfer is `mb` megabytes in 1 MiB frames from P0 to P1.

use crate::report::BenchLine;
use nectar_net::{Channel, LinkModel, MemChannel, NetError, Simulated, TcpChannel};
use std::time::Instant;

const FRAME: usize = 1 << 20;

/// Send `bytes` one way and return (seconds until the receiver has all, sender stats, receiver stats).
fn one_way<C: Channel>(a: &mut C, b: &mut C, bytes: usize) -> Result<(f64, nectar_net::Stats, nectar_net::Stats), NetError>
where
    C: Send,
{
    let chunk = vec![0xa5u8; FRAME];
    let frames = bytes.div_ceil(FRAME);
    let t = Instant::now();
    std::thread::scope(|s| {
        let h = s.spawn(|| -> Result<(), NetError> {
            for _ in 0..frames {
                b.recv()?;
            }
            b.send(&[1])?;
            b.flush()
        });
        for _ in 0..frames {
            a.send(&chunk)?;
        }
        a.recv()?;
        h.join().map_err(|_| NetError::Closed)??;
        Ok::<_, NetError>(())
    })?;
    Ok((t.elapsed().as_secs_f64(), a.stats(), b.stats()))
}

/// Ping-pong `n` one-byte messages; returns the mean round-trip time in seconds.
fn rtt<C: Channel + Send>(a: &mut C, b: &mut C, n: usize) -> Result<f64, NetError> {
    let t = Instant::now();
    std::thread::scope(|s| {
        let h = s.spawn(|| -> Result<(), NetError> {
            for _ in 0..n {
                let m = b.recv()?;
                b.send(&m)?;
            }
            b.flush()
        });
        for _ in 0..n {
            a.send(&[7])?;
            a.recv()?;
        }
        h.join().map_err(|_| NetError::Closed)??;
        Ok::<_, NetError>(())
    })?;
    Ok(t.elapsed().as_secs_f64() / n as f64)
}

fn tcp_pair() -> Result<(TcpChannel, TcpChannel), NetError> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let h = std::thread::spawn(move || TcpChannel::connect(addr));
    let (s, _) = l.accept()?;
    let a = TcpChannel::from_stream(s)?;
    let b = h.join().map_err(|_| NetError::Closed)??;
    Ok((a, b))
}

pub fn run(mb: usize) -> Result<Vec<BenchLine>, NetError> {
    let bytes = mb * 1_000_000;
    let mut out = Vec::new();
    let line = |variant: &str, secs: f64, sa: nectar_net::Stats, sb: nectar_net::Stats| {
        BenchLine::new("net", variant)
            .param("megabytes", mb)
            .seconds(secs)
            .traffic(sa, sb)
            .extra("achieved_mbps", sa.bytes_sent as f64 * 8.0 / secs / 1e6)
    };

    let (mut a, mut b) = MemChannel::pair();
    let (s, sa, sb) = one_way(&mut a, &mut b, bytes)?;
    out.push(line("mem", s, sa, sb));

    let (mut a, mut b) = tcp_pair()?;
    let (s, sa, sb) = one_way(&mut a, &mut b, bytes)?;
    out.push(line("tcp-loopback", s, sa, sb));

    for (name, model) in [("sim-lan", LinkModel::LAN), ("sim-wan", LinkModel::WAN)] {
        let (a, b) = MemChannel::pair();
        let (mut a, mut b) = (Simulated::new(a, model), Simulated::new(b, model));
        let (s, sa, sb) = one_way(&mut a, &mut b, bytes)?;
        let r = rtt(&mut a, &mut b, 20)?;
        let target_mbps = model.bandwidth_bps / 1e6;
        // Payload rate only: the transfer time includes one latency for the data and one for
        // the acknowledgement, which the model accounts separately.
        let data_secs = s - 2.0 * model.latency.as_secs_f64();
        let achieved = sa.bytes_sent as f64 * 8.0 / data_secs / 1e6;
        out.push(
            BenchLine::new("net", name)
                .param("megabytes", mb)
                .param("target_mbps", target_mbps)
                .param("target_one_way_ms", model.latency.as_secs_f64() * 1e3)
                .seconds(s)
                .traffic(sa, sb)
                .extra("achieved_mbps", achieved)
                .extra("bandwidth_error_pct", (achieved / target_mbps - 1.0) * 100.0)
                .extra("rtt_ms", r * 1e3)
                .extra("model_estimate_seconds", model.estimate(sa.bytes_sent + sb.bytes_sent, 2).as_secs_f64()),
        );
    }
    Ok(out)
}
