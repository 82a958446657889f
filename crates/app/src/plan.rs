//! `nectar plan`: the BLB FineGrainFusion plan of a model's layers ([`nectar_blb::plan`]):
//! fused CKKS blocks, their depth and BLB Table 6 parameter set, rotations and the CKKS<->MPC
//! conversions at their boundaries, for one layer in steady state (what `--suite blb` runs,
//! [`nectar_model::secure::blb`]).

use nectar_bench::fixtures::random::{random_config, RandomArch};
use nectar_blb::FusionPlan;
use nectar_model::secure::blb_spec::fusion_plan;
use nectar_model::ModelConfig;
use std::path::Path;

/// Where the model's shape comes from.
pub enum Source<'a> {
    /// A Hugging Face directory (only its `config.json` is read).
    Dir(&'a Path),
    /// A benchmark shape name (`bert-base`, `bert-large`, `gpt2`...), as `nectar bench model --arch`.
    Shape(&'a str),
}

/// The plan of `source` for `tokens` tokens under `suite` (a suite spec; only suites whose
/// matmul is BLB's CKKS fusion have a plan).
pub fn build(source: &Source, suite: &str, tokens: usize) -> Result<FusionPlan, String> {
    let s = crate::suites::resolve(Some(suite), None, &[], crate::suites::DEFAULT_SUITE)?;
    if !s.matmul.fused() {
        return Err(format!(
            "suite '{suite}' has no fusion plan: only the blb suite (matmul=blb-fused) fuses linear operators under CKKS (BLB §4); \
             `nectar suites` lists every suite's protocol per operator"
        ));
    }
    let (config, name) = match source {
        Source::Dir(dir) => {
            let c = ModelConfig::from_file(&dir.join("config.json")).map_err(|e| e.to_string())?;
            let name = format!("{} ({})", c.model_type(), dir.display());
            (c, name)
        }
        Source::Shape(shape) => {
            let arch = RandomArch::parse(shape)
                .ok_or_else(|| format!("unknown --model-shape '{shape}' (bert-tiny, bert-base, bert-large, gpt2, vit-base, llama)"))?;
            (random_config(arch, None), arch.name().to_string())
        }
    };
    fusion_plan(&config, &name, tokens).map_err(|e| e.to_string())
}

/// Prints the plan as a table, or as one JSON document.
pub fn run(source: &Source, suite: &str, tokens: usize, json: bool) -> Result<(), String> {
    let plan = build(source, suite, tokens)?;
    if json {
        outln!(
            "{}",
            serde_json::to_string(&plan).map_err(|e| e.to_string())?
        );
    } else {
        outln!("{plan}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_blb_has_a_plan() {
        let plan = build(&Source::Shape("bert-base"), "blb", 128).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.blocks().count(), 5);
        let e = build(&Source::Shape("bert-base"), "bumblebee", 128)
            .err()
            .unwrap_or_default();
        assert!(e.contains("only the blb suite"), "{e}");
        assert!(build(&Source::Shape("bert-base"), "bumblebee+matmul=blb-fused", 128).is_ok());
        let e = build(&Source::Shape("gpt3"), "blb", 128)
            .err()
            .unwrap_or_default();
        assert!(e.contains("unknown --model-shape"), "{e}");
    }

    #[test]
    fn a_model_directory() {
        let dir = std::env::temp_dir().join(format!("nectar-plan-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        nectar_bench::fixtures::tiny::write_tiny_bert(&dir, 1).unwrap_or_else(|e| panic!("{e}"));
        let plan = build(&Source::Dir(&dir), "blb", 16);
        let missing = build(&Source::Dir(&dir.join("missing")), "blb", 16);
        let _ = std::fs::remove_dir_all(&dir);
        let plan = plan.unwrap_or_else(|e| panic!("{e}"));
        assert!(plan.model.starts_with("bert"));
        let e = missing.err().unwrap_or_default();
        assert!(e.contains("config.json"), "{e}");
    }
}
