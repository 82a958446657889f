//! Fuzzing the frame parser (issue 18 item 5): arbitrary byte streams from a TCP peer — random
//! headers (including the abort mark), short payloads, abrupt ends — make `recv` return frames
//! or typed errors, never panic, and never accept a frame above the limit.

use nectar_net::{Channel, Limits, NetError, TcpChannel};
use proptest::collection::vec;
use proptest::prelude::*;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

fn feed(bytes: Vec<u8>) -> Vec<Result<Vec<u8>, NetError>> {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let h = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let _ = s.write_all(&bytes);
        // dropping closes the stream: the reader sees the end
    });
    let (s, _) = l.accept().unwrap();
    let mut ch = TcpChannel::from_stream(s).unwrap();
    ch.set_limits(Limits { max_frame: 4096, frame_deadline: Some(Duration::from_secs(2)) }).unwrap();
    let mut out = Vec::new();
    for _ in 0..8 {
        let r = ch.recv();
        let stop = r.is_err();
        out.push(r);
        if stop {
            break;
        }
    }
    let _ = h.join();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_streams_give_frames_or_errors(bytes in vec(any::<u8>(), 0..10000)) {
        for f in feed(bytes).into_iter().flatten() {
            prop_assert!(f.len() <= 4096);
        }
    }

    #[test]
    fn well_formed_prefixes_then_garbage(
        frames in vec(vec(any::<u8>(), 0..300), 0..4),
        tail in vec(any::<u8>(), 0..64),
    ) {
        let mut bytes = Vec::new();
        for f in &frames {
            bytes.extend_from_slice(&(f.len() as u32).to_le_bytes());
            bytes.extend_from_slice(f);
        }
        bytes.extend_from_slice(&tail);
        let got = feed(bytes);
        // the well-formed frames come back in order, then whatever the tail gives
        for (f, r) in frames.iter().zip(&got) {
            prop_assert_eq!(r.as_ref().ok(), Some(f));
        }
    }
}
