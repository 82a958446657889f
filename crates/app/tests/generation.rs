//! Private generation (issue 49 item 4): conversation turns keep the KV cache, the client's
//! stop ends a turn on both sides, streamed tokens are those of the result; and SmolLM2 (the
//! real GGUF instruct model, fetched by `make test`) generates its plaintext greedy tokens.

use nectar_app::private::{run_local_live, ServerModel};
use nectar_app::session::Input;
use nectar_model::secure::{Output, Task};
use nectar_model::{Model, Network, Suite};

fn tokens(o: &Output) -> Vec<u32> {
    match o {
        Output::Tokens(t) => t.clone(),
        other => panic!("tokens expected, got {other:?}"),
    }
}

fn plaintext(model: &Model, ids: &[u32], n: usize) -> Vec<u32> {
    match model.network() {
        Network::Llama(l) => l.generate(ids, n).unwrap(),
        _ => panic!("llama expected"),
    }
}

#[test]
fn conversation_turns_keep_the_cache_and_stop_when_told() {
    let dir = tempfile::tempdir().unwrap();
    nectar_bench::fixtures::tiny::write_tiny_llama(dir.path(), 9).unwrap();
    let server = ServerModel::load(dir.path()).unwrap();
    let model = Model::load(dir.path()).unwrap();
    let suite = Suite::parse("nectar+ot=ferret-small").unwrap();
    let (p1, p2) = (vec![1u32, 30, 12, 7], vec![22u32, 5]);
    let mut streamed = Vec::new();
    let ((a, b, c), run, _) = run_local_live(&server, &suite, None, Some(7), |live| {
        let a = live.query(Task::Chat { n_new: 3, reset: true }, &Input::Ids(p1.clone()), Some(&mut |t| {
            streamed.push(t);
            true
        }))?;
        // the second turn continues after the first's last token; stopped after one token
        let b = live.query(Task::Chat { n_new: 3, reset: false }, &Input::Ids(p2.clone()), Some(&mut |_| false))?;
        let c = live.query(Task::Chat { n_new: 2, reset: true }, &Input::Ids(p2.clone()), None)?;
        Ok((a, b, c))
    })
    .unwrap();
    assert_eq!(run.reports.len(), 3);
    let first = tokens(&a.output);
    assert_eq!(first, plaintext(&model, &p1, 3), "turn 1 against the f32 greedy tokens");
    assert_eq!(streamed, first, "the streamed tokens are the result's");
    assert_eq!(a.token_seconds.len(), 3);
    // turn 2: the whole conversation so far, then one token (the client stopped)
    let mut conv = p1.clone();
    conv.extend(&first);
    conv.extend(&p2);
    let second = tokens(&b.output);
    assert_eq!(second, plaintext(&model, &conv, 1));
    assert_eq!(b.len, 1 + p2.len(), "the previous turn's last token goes first");
    // a reset turn starts from nothing
    assert_eq!(tokens(&c.output), plaintext(&model, &p2, 2));
}

#[test]
fn a_turn_past_the_context_window_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    nectar_bench::fixtures::tiny::write_tiny_llama(dir.path(), 9).unwrap();
    let server = ServerModel::load(dir.path()).unwrap();
    let positions = match &server.config {
        nectar_model::config::ModelConfig::Llama(c) => c.max_position_embeddings,
        _ => unreachable!(),
    };
    let suite = Suite::parse("nectar+ot=ferret-small").unwrap();
    let Err(err) = run_local_live(&server, &suite, None, Some(3), |live| {
        live.query(Task::Chat { n_new: 1, reset: true }, &Input::Ids(vec![1, 2, 3]), None)?;
        // alone it fits (2 + positions − 3 tokens); after the 3 kept positions it does not
        live.query(Task::Chat { n_new: positions - 3, reset: false }, &Input::Ids(vec![4]), None)?;
        Ok(())
    }) else {
        panic!("a turn past the context window ran")
    };
    assert!(err.contains("past the context window"), "{err}");
}

#[test]
fn smollm2_private_greedy_tokens_equal_plaintext() {
    let home = nectar_model::home::default_home();
    let dir = nectar_model::home::smollm2_dir(&home);
    assert!(nectar_model::home::smollm2_present(&home), "SmolLM2 missing: `make test` fetches it (nectar fetch-model smollm2)");
    let server = ServerModel::load(&dir).unwrap();
    // the server calibrated its massive activations (SmolLM2's residual reaches 2.5e4)
    let nectar_model::config::ModelConfig::Llama(c) = &server.config else { panic!("llama expected") };
    assert!(c.scale_shifts.get("layers.11.mlp.down_proj").is_some_and(|&k| k >= 2), "{:?}", c.scale_shifts);
    let model = Model::load(&dir).unwrap();
    let ids = model.tokenizer().unwrap().encode("The capital of France is").unwrap().ids;
    let suite = Suite::nectar();
    let (out, _, _) = run_local_live(&server, &suite, None, None, |live| live.query(Task::Generate { n_new: 2 }, &Input::Ids(ids.clone()), None)).unwrap();
    let got = tokens(&out.output);
    assert_eq!(got, plaintext(&model, &ids, 2), "private {got:?}");
}
