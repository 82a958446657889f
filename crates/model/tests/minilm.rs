//! The real all-MiniLM-L6-v2 (fetched by `nectar fetch-model minilm`, which `make test` runs
//! first); a missing model fails these tests.

use nectar_model::{cosine, home, Model};

#[test]
fn minilm_reproduces_sentence_transformers_example() {
    let home = home::default_home();
    assert!(
        home::minilm_present(&home),
        "MiniLM not found under {}: run `nectar fetch-model minilm` (`make test` fetches it first)",
        home.display()
    );
    let model = Model::load(&home::minilm_dir(&home)).unwrap();
    let texts = [
        "The weather is lovely today.",
        "It's so sunny outside!",
        "He drove to the stadium.",
    ];
    let t0 = std::time::Instant::now();
    let emb = model.embed(&texts).unwrap();
    let secs = t0.elapsed().as_secs_f64();
    eprintln!("MiniLM: 3 sentences embedded in {secs:.3} s");
    // Published in the sentence-transformers documentation (quickstart).
    let want = [
        [1.0000, 0.6660, 0.1046],
        [0.6660, 1.0000, 0.1411],
        [0.1046, 0.1411, 1.0000],
    ];
    for i in 0..3 {
        assert_eq!(emb[i].len(), 384);
        let norm = emb[i].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
        for j in 0..3 {
            let c = cosine(&emb[i], &emb[j]);
            eprint!("{c:.6} ");
            // The published matrix is rounded to 4 decimals; ours must round to the same.
            assert_eq!(
                format!("{c:.4}"),
                format!("{:.4}", want[i][j]),
                "cos({i},{j}) = {c:.6}"
            );
        }
        eprintln!();
    }
    // Longer than max_seq_length (256): truncated, not an error.
    let long = "word ".repeat(1000);
    let e = model.embed(&[long.as_str()]).unwrap();
    assert_eq!(e[0].len(), 384);
    let s = model.summary();
    eprintln!("{s}");
    assert!(s.contains("parameters:    22,713,216"), "{s}");
}
