# karpy: `make test` and `make run` work on a fresh clone (they create .venv first).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# Parallel test workers: one per core, at least two.
PYTEST_WORKERS ?= auto

.PHONY: all venv test lint format run bench clean

all: lint test

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,sandbox]'
	@touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup

lint: $(STAMP)
	$(BIN)/ruff check karpy tests
	$(BIN)/ruff format --check karpy tests
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix karpy tests
	$(BIN)/ruff format karpy tests

# The documentation site (mkdocs-material), strict: a broken link, a missing anchor or a page
# left out of the nav fails the build. Output in build/site/ (gitignored). `make test` checks it
# too (tests/deploy/test_docs.py).
.PHONY: docs
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet -f docs/mkdocs/mkdocs.yml

# The sandbox demo: an emulated cluster on loopback with karpy provisioning for a demo workload.
run: $(STAMP)
	$(BIN)/karpy sandbox run

# Benchmarks print a table and write JSON under bench/results/.
bench: $(STAMP)
	@mkdir -p bench/results
	$(BIN)/python -m tests.bench

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis build dist *.egg-info
