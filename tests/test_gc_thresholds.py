"""The suite's processes collect cyclic garbage at `SUITE_GC_THRESHOLDS` (tests/conftest.py
says why: with Python's default thresholds full collections took a quarter of the AWS
tests' CPU). This test fails if the setting is lost, instead of the suite quietly running
slower."""

from __future__ import annotations

import gc

from tests.conftest import SUITE_GC_THRESHOLDS


def test_this_process_runs_with_the_suites_gc_thresholds() -> None:
    assert gc.isenabled()
    assert gc.get_threshold() == SUITE_GC_THRESHOLDS
