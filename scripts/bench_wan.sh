#!/usr/bin/env bash
# The JSON behind docs/results/wan.md (issue 48): MiniLM / 32 tokens under every preset suite and
# the tuned suite (`nectar tune`) on each named link, then (argument `model`) BERT-base / 128
# tokens, all 12 layers, with `nectar` and `bumblebee` on blb-wan3 and bumblebee-wan.
#
#   bash scripts/bench_wan.sh                 # MiniLM on every link (about 2 hours on 2 cores)
#   bash scripts/bench_wan.sh lan blb-wan3    # MiniLM on these links only
#   bash scripts/bench_wan.sh model           # the BERT-base runs (about 1 hour)
#   bash scripts/bench_wan.sh model blb-wan3:nectar   # one of them (NET:SUITE)
#
# Each link's lines replace that link's earlier lines in docs/results/wan.jsonl (the tuned
# suite's `nectar tune --json` line in docs/results/tune.jsonl); the commit and command of each
# run are kept in docs/results/wan.meta.json. Then `make results` renders wan.md, and this
# script redraws docs/results/wan.svg (`nectar report --links-svg`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo build --quiet --release -p nectar-app
BIN=target/release/nectar
COMMIT=$(git rev-parse --short HEAD)
MACHINE="2-core VM (nproc = 2), 24 GiB RAM; nothing else running"
MINILM="$HOME/.cache/nectar/models/minilm"
SUITES="nectar,bumblebee,bumblebee+gelu=p4,east,rotl,rotl+compare=millionaire,bumblebee+matmul=ckks+matmul-shared=ckks"
RES=docs/results
touch "$RES/wan.jsonl" "$RES/wan-model.jsonl" "$RES/tune.jsonl"
[ -f "$RES/wan.meta.json" ] || echo '{"build": "release profile (`cargo build --release`, opt-level 3)", "machine": "", "commands": []}' > "$RES/wan.meta.json"

# record FILE KEY CMD: appends one command with this commit to the meta file (replacing an
# earlier command of the same KEY)
record() {
  python3 - "$RES/wan.meta.json" "$1" "$2" "$COMMIT" "$MACHINE" <<'PY'
import json, sys
path, key, cmd, commit, machine = sys.argv[1:6]
m = json.load(open(path))
m["machine"] = machine
m["commands"] = [c for c in m["commands"] if c.get("key") != key] + [{"key": key, "command": cmd, "commit": commit}]
json.dump(m, open(path, "w"), indent=2)
open(path, "a").write("\n")
PY
}

# replace FILE NET NEWFILE: the lines of FILE whose params.net (or net) is NET give way to NEWFILE's
replace() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
path, net, new = sys.argv[1:4]
def net_of(l):
    d = json.loads(l)
    return d.get("params", {}).get("net", d.get("net"))
old = [l for l in open(path) if l.strip() and net_of(l) != net]
fresh = [l for l in open(new) if l.strip()]
open(path, "w").writelines(old + fresh)
PY
}

if [ "${1:-}" = "model" ]; then
  shift
  RUNS=("$@")
  [ ${#RUNS[@]} -gt 0 ] || RUNS=(blb-wan3:nectar blb-wan3:bumblebee bumblebee-wan:nectar bumblebee-wan:bumblebee)
  for r in "${RUNS[@]}"; do
    net=${r%%:*}
    suite=${r#*:}
    {
      CMD="bench model --arch bert-base --seq 128 --suite $suite --net $net --json --quiet"
      NEW=$(mktemp)
      "$BIN" $CMD > "$NEW"
      python3 - "$RES/wan-model.jsonl" "$net" "$suite" "$NEW" <<'PY'
import json, sys
path, net, suite, new = sys.argv[1:5]
keep = [l for l in open(path) if l.strip() and not (json.loads(l)["params"].get("net") == net and json.loads(l)["params"].get("suite") == suite)]
open(path, "w").writelines(keep + [l for l in open(new) if l.strip()])
PY
      record "model $suite $net" "nectar $CMD"
    }
  done
  exit 0
fi

LINKS=("$@")
[ ${#LINKS[@]} -gt 0 ] || LINKS=(lan bumblebee-wan blb-wan2 blb-wan3 rotl-wan)
for net in "${LINKS[@]}"; do
  TUNE="tune --net $net --model $MINILM --tokens 32 --json"
  NEW=$(mktemp)
  "$BIN" $TUNE > "$NEW"
  replace "$RES/tune.jsonl" "$net" "$NEW"
  record "tune $net" "nectar ${TUNE/$HOME/\~}"
  CMD="bench suites --model $MINILM --tokens 32 --suites $SUITES,tuned:$net --net $net --json"
  NEW=$(mktemp)
  "$BIN" $CMD > "$NEW"
  replace "$RES/wan.jsonl" "$net" "$NEW"
  record "suites $net" "nectar ${CMD/$HOME/\~}"
done
"$BIN" report "$RES/wan.jsonl" --links-svg "$RES/wan.svg" || echo "(wan.svg needs lines of two links or more)"
