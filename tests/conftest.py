"""Shared pytest configuration: fixtures every suite can use are registered here, and the
markers that ``make test-fast`` selects by are applied.

``make test-fast`` runs the pure and component tests only (``-m "not process and not
deploy and not moto and not slow"``). What it leaves out is marked here, centrally, so
nobody marks tests by hand:

- ``process``: a test that starts another process (``karpy controller``, ``karpy
  sandbox``, kubectl, helm): every test under ``tests/e2e/``, every test marked
  ``kubectl``, and every test of a module whose source names ``subprocess`` (or asyncio's
  ``create_subprocess_exec``) or that uses the end-to-end process helpers (``tests.e2e``). The rule
  is by module, not by test: a module mixing quick tests with process tests loses its
  quick ones from the fast run too, the price of a rule nobody has to remember;
- ``deploy``: every test under ``tests/deploy/``, which checks what is shipped (chart,
  image, CloudFormation, dashboards, docs site) rather than karpy's code;
- ``moto``: a test that uses a moto server (a fixture named in `MOTO_FIXTURES`): the AWS
  provider's tests, half the fast run's time on their own.

The slow and process tests are also collected first. xdist hands tests to its workers in
collection order, so the minute-long end-to-end runs start at once and the thousands of
quick tests fill the gaps, instead of one long run starting last and holding up the end.

Every moto server of the run, in a worker or in a sandbox process a test starts, keeps
moto's rendered instance-type catalogue in one directory of the run
(`shared_moto_catalogue`), so moto renders it once per run instead of once per process.

Every process of the run collects cyclic garbage less often than Python's default
(`SUITE_GC_THRESHOLDS`). A test process keeps a large heap alive for its whole life (an
in-process moto with its backends, the session's instance-type catalogue, modules of
the whole of karpy), and the default thresholds (700, 10, 10) start a full collection,
a walk over all of it of 0.2 to 0.5 s, every few thousand surviving allocations: in
tests/aws that was a quarter of the CPU (measured with ``-n 2``: 103 s of CPU, 24 s of
it in full collections). A young generation of 50,000 allocations leaves one or two
full collections per process. Reference counting still frees everything that is not
in a cycle, and `gc.collect()` still collects everything; only the automatic trigger
moves. karpy's own processes (the controller and sandboxes tests start) keep the
default: this is the test processes' setting, not karpy's (for its bursts karpy has
`karpy.base.gcpause`).
"""

from __future__ import annotations

import functools
import gc
import os
import re
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from karpy.sandbox.aws import CATALOG_CACHE_ENV

pytest_plugins = ["tests.fixtures.apiserver"]

TESTS = Path(__file__).resolve().parent
E2E = TESTS / "e2e"
DEPLOY = TESTS / "deploy"
MOTO_FIXTURES = frozenset({"moto_server", "moto_endpoint"})
SUITE_GC_THRESHOLDS = (50_000, 10, 10)  # see the module docstring
STARTS_PROCESS = re.compile(r"\b(subprocess|create_subprocess_(exec|shell)|Popen)\b")


@functools.cache
def starts_processes(module: types.ModuleType) -> bool:
    """Whether ``module`` (a test module) can start processes: it lives under tests/e2e,
    its source names a way to start one (``subprocess``, asyncio's
    ``create_subprocess_exec``), or it uses the end-to-end process helpers. Asked once
    per module, not once per test."""
    path = Path(str(module.__file__)).resolve()
    if E2E in path.parents or STARTS_PROCESS.search(path.read_text(encoding="utf-8")):
        return True
    for value in vars(module).values():
        owner = value.__name__ if isinstance(value, types.ModuleType) else (
            getattr(value, "__module__", None) or "")  # fmt: skip
        if owner == "tests.e2e" or owner.startswith("tests.e2e."):
            return True
    return False


def pytest_configure(config: pytest.Config) -> None:
    """Collect cyclic garbage less often in this process (module docstring); each xdist
    worker loads this conftest and so sets its own."""
    gc.set_threshold(*SUITE_GC_THRESHOLDS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = getattr(item, "module", None)
        if module is None:
            continue
        if starts_processes(module) or item.get_closest_marker("kubectl") is not None:
            item.add_marker(pytest.mark.process)
        if DEPLOY in Path(str(module.__file__)).resolve().parents:
            item.add_marker(pytest.mark.deploy)
        if MOTO_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.moto)
    items.sort(key=_start_order)  # stable: the same order on every worker


def _start_order(item: pytest.Item) -> int:
    """Slow tests first, then the other process tests, then the rest."""
    if item.get_closest_marker("slow") is not None:
        return 0
    return 1 if item.get_closest_marker("process") is not None else 2


@pytest.fixture(scope="session", autouse=True)
def shared_moto_catalogue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The run's directory for moto's rendered catalogue answers (`CatalogCache`), named
    in this worker's environment: its moto servers read it, and so do the sandboxes its
    tests start (they inherit the environment; `clean_env` passes it on). Under xdist
    the base temporary directory is the worker's own, so its parent, the run's, is used:
    one render for the whole run (~1.6 s of CPU per process otherwise)."""
    base = tmp_path_factory.getbasetemp()
    run = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    directory = run / "moto-catalogue"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CATALOG_CACHE_ENV, str(directory))
        yield directory
