"""Disruption's what-if solves honour the cancel flag too: a consolidation decision in a
worker thread ends with `SolveCancelled` once the flag is set, never with a command
built from a partial simulation."""

from __future__ import annotations

import threading

import pytest

from karpy.disruption.methods.command import ConsolidationType
from karpy.disruption.methods.consolidation import consolidate
from karpy.disruption.simulation import WhatIf
from karpy.scheduling.solver import SolveCancelled
from tests.disruption.world import World, managed_node, nodepool, pod_on

POOL = nodepool()


def world() -> World:
    return World([POOL, *managed_node("big", "c-8x-amd64-linux"), pod_on("big", "web-1")])


def what_if(w: World) -> WhatIf:
    return WhatIf(w.snapshot, w.compiled, nominated={}, settings=w.settings, budget=30.0)


def test_a_what_if_with_its_flag_set_raises_instead_of_deciding() -> None:
    w = world()
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(SolveCancelled):
        consolidate(w.candidates(), what_if(w).cancelled_by(cancel), spot_to_spot=False,
                    consolidation_type=ConsolidationType.SINGLE)  # fmt: skip


def test_a_what_if_with_its_flag_unset_decides_as_before() -> None:
    w = world()
    single = ConsolidationType.SINGLE
    flagged, _ = consolidate(w.candidates(), what_if(w).cancelled_by(threading.Event()),
                             spot_to_spot=False, consolidation_type=single)  # fmt: skip
    plain, why = consolidate(w.candidates(), what_if(w), spot_to_spot=False,
                             consolidation_type=single)  # fmt: skip
    assert plain is not None, why
    assert flagged is not None and flagged.describe() == plain.describe()
