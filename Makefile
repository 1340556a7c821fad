# Attention Lab — two commands do everything: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8501
TORCH := torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: run test lint unit browser bench install browser-deps redis-deps clean models handout hall

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build.
	$(BIN)/pip install --quiet $(TORCH)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/streamlit run app.py --server.port $(PORT) --browser.gatherUsageStats false

browser-deps:
	@bash scripts/ensure_chromium.sh

# The class-store tests run on SQLite and on a real Redis (#42): Debian's redis-server, started by the tests themselves
redis-deps:
	@bash scripts/ensure_redis.sh

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

# The float-sensitive tests run twice: on this CPU's kernels, then on torch's portable ones (no SIMD), so another
# machine's CPU (AVX-512, AVX2, none) cannot surprise a landing (#38). Only those tests' time is added.
# The suite runs on every core (pytest-xdist, at most 4 workers: each has its own Streamlit server and Chromium). Work
# stealing keeps the collection's order (conftest puts the long browser tests first); --dist loadfile sorts files by
# their number of tests, which left the longest one-test browser file to run alone at the end (4 of 25 minutes).
JOBS ?= auto
XDIST := -n $(JOBS) --maxprocesses 4 --dist worksteal
# --durations: the slowest tests, printed at the end of every run (#41: the suite in half the time starts from them)
test: $(STAMP) browser-deps redis-deps lint
	$(BIN)/python -m pytest $(XDIST) --durations=30
	ATEN_CPU_CAPABILITY=default $(BIN)/python -m pytest $(XDIST) -m float_sensitive -p no:cacheprovider

unit: $(STAMP) redis-deps
	$(BIN)/python -m pytest $(XDIST) -m "not browser"

browser: $(STAMP) browser-deps
	$(BIN)/python -m pytest $(XDIST) -m browser

# A class of more than about 40 on one machine (#39): one app process per core behind HAProxy, the class in one SQLite
# file they share (deploy/lecture_hall.py --sqlite). A process runs its students' pages on one core: 60 followers of a
# lecture waited 2.2-2.8 s (p95) on one process, 1.3-1.5 s on two (bench/lecture_present.py). Students open :8080.
REPLICAS ?= $(shell $(PY) -c 'import os; print(os.cpu_count() or 2)')
hall: $(STAMP)
	@bash scripts/ensure_redis.sh haproxy
	$(BIN)/python deploy/lecture_hall.py --sqlite --replicas $(REPLICAS)

# Real checkpoints into models/NAME (safetensors only), listed by the app when ATTENTION_LAB_MODEL_DIRS is unset:
# `make models` fetches the curated list, `make models MODELS="gpt2 distilgpt2"` some of it.
MODELS ?= all
models: $(STAMP)
	$(BIN)/python -m viz_model.models list
	$(BIN)/python -m viz_model.models download $(MODELS)

# A lecture as one HTML file that opens offline (#39): `make handout LECTURE=attention` (a built-in lecture's name or
# a lecture file) writes handout-attention.html, its numbers computed now on the lecture's model.
LECTURE ?= attention
handout: $(STAMP)
	$(BIN)/python -m viz_model.handout $(LECTURE) handout-$(basename $(notdir $(LECTURE))).html

bench: $(STAMP)
	$(BIN)/python bench/bench_model.py

clean:
	rm -rf $(VENV) test-artifacts .pytest_cache .ruff_cache
