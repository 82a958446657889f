//! The real all-MiniLM-L6-v2, when its files are present (`nectar fetch-model minilm`).

use nectar_model::{cosine, fetch, Model};

#[test]
fn minilm_reproduces_sentence_transformers_example() {
    let home = fetch::default_home();
    if !fetch::minilm_present(&home) {
        eprintln!(
            "skipped: MiniLM not found under {} (run `nectar fetch-model minilm`)",
            home.display()
        );
        return;
    }
    let model = Model::load(&fetch::minilm_dir(&home)).unwrap();
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
            assert!(
                (c as f64 - want[i][j]).abs() < 5e-5,
                "cos({i},{j}) = {c:.6}, published {:.4}",
                want[i][j]
            );
        }
    }
    let s = model.summary();
    assert!(s.contains("parameters:    22,713,216"), "{s}");
}
