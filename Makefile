# GRPO from scratch. `make book` and `make test` each set up .venv on first use.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard chapters/[0-9][0-9]_*.ipynb))

# Determinism: one thread, and pinned CPU kernel paths so stored outputs match on any x86-64
# with AVX2 (see README, "Reproducibility"). OPENBLAS_CORETYPE/L2_SIZE stay as the machine sets them.
export OMP_NUM_THREADS := 1
export MKL_NUM_THREADS := 1
export OPENBLAS_NUM_THREADS := 1
export ATEN_CPU_CAPABILITY := avx2
export MKL_CBWR := AVX2,STRICT
export ONEDNN_MAX_CPU_ISA := AVX2
export PYTHONHASHSEED := 0
export TQDM_DISABLE := 1
export HF_HUB_OFFLINE := 1

.PHONY: help book test unit nbval book-strict lab execute bench clean

help:
	@echo "make book     build the HTML book from the stored notebook outputs"
	@echo "make test     unit tests, nbval over every chapter, strict book build"
	@echo "make lab      open the chapters in JupyterLab"
	@echo "make execute  re-run every chapter in place (after a change)"
	@echo "make bench    time the experiments (bench/)"

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . --quiet
	@echo "The book is at file://$(CURDIR)/_build/html/index.html"

test: unit nbval book-strict
	@echo "make test: all passed"

unit: $(STAMP)
	$(BIN)/python -m pytest tests -q

nbval: $(STAMP)
	@test -n "$(NOTEBOOKS)" || { echo "no chapters/NN_*.ipynb found: nothing for nbval to test"; exit 1; }
	$(BIN)/python -m pytest -q -p no:cacheprovider --nbval --nbval-current-env \
	  --nbval-sanitize-with tests/nbval_sanitize.cfg $(NOTEBOOKS)

book-strict: $(STAMP)
	$(BIN)/jupyter-book build . --quiet --warningiserror --keep-going
	@echo "The book is at file://$(CURDIR)/_build/html/index.html"

lab: $(STAMP)
	TQDM_DISABLE= $(BIN)/jupyter lab chapters/

execute: $(STAMP)
	$(BIN)/python .ci/execute_notebooks.py $(or $(NB),$(NOTEBOOKS))

bench: $(STAMP)
	@for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f; done

clean:
	rm -rf _build
