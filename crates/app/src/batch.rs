//! Batched queries (issue 52): the client's inputs grouped into [`Task::Batch`] queries of up to
//! `N` inputs (one forward pass each, so a batch pays the protocol's flights once), and a
//! session's reports split back into one result per input, in the order the inputs were given.

use crate::session::{Input, QueryReport};
use nectar_model::secure::{Output, Task, MAX_BATCH_INPUTS};

/// The queries of `inputs` under `task`: one per input (`batch <= 1`), or [`Task::Batch`]
/// queries of `batch` inputs each (the last may hold fewer; a group of one input is a plain
/// query), their ids one input after another.
pub fn queries(task: &Task, inputs: &[Input], batch: usize) -> Result<Vec<(Task, Input)>, String> {
    if batch <= 1 {
        return Ok(inputs.iter().map(|i| (task.clone(), i.clone())).collect());
    }
    if batch > MAX_BATCH_INPUTS {
        return Err(format!("--batch {batch}: at most {MAX_BATCH_INPUTS} inputs per batch"));
    }
    if !matches!(task, Task::Embed | Task::Classify) {
        return Err(format!("--batch: batches embed or classify with an encoder; this model's task is {task:?}"));
    }
    inputs
        .chunks(batch)
        .map(|group| {
            if let [one] = group {
                return Ok((task.clone(), one.clone()));
            }
            let mut ids = Vec::new();
            let mut lens = Vec::with_capacity(group.len());
            for input in group {
                let Input::Ids(i) = input else {
                    return Err("--batch: images (ViT) run one per query".to_string());
                };
                lens.push(i.len());
                ids.extend_from_slice(i);
            }
            Ok((Task::Batch { each: Box::new(task.clone()), lens }, Input::Ids(ids)))
        })
        .collect()
}

/// One input's result inside a session's reports.
pub struct PerInput<'a> {
    /// The query that carried it (a batch's figures are the whole batch's).
    pub report: &'a QueryReport,
    pub output: &'a Output,
    /// Its tokens.
    pub tokens: usize,
    /// Inputs in its query (1: not batched).
    pub batch: usize,
}

impl PerInput<'_> {
    /// Its share of its query's seconds.
    pub fn seconds(&self) -> f64 {
        self.report.seconds / self.batch as f64
    }
    /// Its share of its query's bytes (both ways).
    pub fn bytes(&self) -> f64 {
        (self.report.bytes_sent + self.report.bytes_recv) as f64 / self.batch as f64
    }
}

/// The reports' results one per input, in order.
pub fn per_input(reports: &[QueryReport]) -> Vec<PerInput<'_>> {
    let mut out = Vec::new();
    for r in reports {
        match (&r.task, &r.output) {
            (Task::Batch { lens, .. }, Output::Batch(outs)) => {
                for (o, &tokens) in outs.iter().zip(lens) {
                    out.push(PerInput { report: r, output: o, tokens, batch: lens.len() });
                }
            }
            _ => out.push(PerInput { report: r, output: &r.output, tokens: r.len, batch: 1 }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_group_into_batches_in_order() -> Result<(), String> {
        let inputs: Vec<Input> = [vec![1, 2, 3], vec![4, 5], vec![6], vec![7, 8, 9, 10], vec![11, 12]]
            .into_iter()
            .map(Input::Ids)
            .collect();
        let q = queries(&Task::Embed, &inputs, 2)?;
        assert_eq!(q.len(), 3);
        let Input::Ids(ids) = &q[0].1 else { panic!() };
        assert_eq!(ids, &[1, 2, 3, 4, 5]);
        assert_eq!(q[0].0, Task::Batch { each: Box::new(Task::Embed), lens: vec![3, 2] });
        assert_eq!(q[1].0, Task::Batch { each: Box::new(Task::Embed), lens: vec![1, 4] });
        // A group of one input is a plain query.
        assert_eq!(q[2].0, Task::Embed);
        assert_eq!(queries(&Task::Embed, &inputs, 1)?.len(), 5);
        assert!(queries(&Task::Generate { n_new: 2 }, &inputs, 2).unwrap_err().contains("encoder"));
        assert!(queries(&Task::Embed, &inputs, MAX_BATCH_INPUTS + 1).is_err());
        Ok(())
    }

    #[test]
    fn reports_split_per_input() {
        let report = |task: Task, len: usize, output: Output| QueryReport {
            task,
            len,
            seconds: 4.0,
            bytes_sent: 300,
            bytes_recv: 100,
            rounds: 7,
            output,
            token_seconds: Vec::new(),
            token_bytes: Vec::new(),
            token_rounds: Vec::new(),
            profile: Default::default(),
        };
        let reports = vec![
            report(
                Task::Batch { each: Box::new(Task::Embed), lens: vec![3, 2] },
                5,
                Output::Batch(vec![Output::Embedding(vec![1.0]), Output::Embedding(vec![2.0])]),
            ),
            report(Task::Embed, 4, Output::Embedding(vec![3.0])),
        ];
        let p = per_input(&reports);
        assert_eq!(p.len(), 3);
        assert_eq!((p[0].tokens, p[0].batch, p[0].seconds(), p[0].bytes()), (3, 2, 2.0, 200.0));
        assert_eq!(p[1].output, &Output::Embedding(vec![2.0]));
        assert_eq!((p[2].tokens, p[2].batch, p[2].seconds()), (4, 1, 4.0));
    }
}
