# Shared by scripts/bench_*.sh: source it, call `bench_init NAME`, then `run ARGS...` for each
# nectar run (one JSON line each into docs/results/NAME.jsonl), then `bench_meta "MACHINE"`
# (the commands with the commit they ran at into docs/results/NAME.meta.json).
# RUN_ENV (optional): an environment assignment for every run, e.g. RAYON_NUM_THREADS=1 (or for
# one: `RUN_ENV=... run ARGS`); it is recorded in front of the command in the meta file.
# `run_bin BIN COMMIT ARGS...`: a run of another build (e.g. the parent commit's binary, for a
# same-sitting comparison), recorded with that commit.

# `bench_init NAME dev`: the dev profile (opt-level 2, dependencies 3; what `cargo test` builds)
# instead of the release profile.
bench_init() {
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  if [ "${2:-}" = dev ]; then
    cargo build --quiet -p nectar-app
    BIN=${CARGO_TARGET_DIR:-target}/debug/nectar
    BUILD="dev profile (\`cargo build\`, opt-level 2, dependencies opt-level 3)"
  else
    cargo build --quiet --release -p nectar-app
    BIN=${CARGO_TARGET_DIR:-target}/release/nectar
    BUILD="release profile (\`cargo build --release\`, opt-level 3)"
  fi
  OUT=docs/results/$1.jsonl
  META=docs/results/$1.meta.json
  COMMIT=$(git rev-parse --short HEAD)
  : > "$OUT"
  CMDS=()
  CMD_COMMITS=()
}

run() {
  run_bin "$BIN" "$COMMIT" "$@"
}

run_bin() {
  local bin=$1 commit=$2
  shift 2
  CMDS+=("${RUN_ENV:+$RUN_ENV }nectar $*")
  CMD_COMMITS+=("$commit")
  env ${RUN_ENV:-} "$bin" "$@" >> "$OUT"
}

bench_meta() {
  python3 - "$META" "$1" "$BUILD" "${#CMDS[@]}" "${CMDS[@]}" "${CMD_COMMITS[@]}" <<'PY'
import json, sys
meta, machine, build, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cmds, commits = sys.argv[5:5 + n], sys.argv[5 + n:]
json.dump({
    "commands": [{"command": c, "commit": k} for c, k in zip(cmds, commits)],
    "build": build,
    "machine": machine,
}, open(meta, "w"), indent=2)
open(meta, "a").write("\n")
PY
}
