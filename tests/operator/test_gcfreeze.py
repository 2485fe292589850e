"""The collector's freezer: what lives is frozen out of full collections; what is garbage
(cycles included) is collected before anything is frozen; the frozen generation is walked
in full when it has doubled or after its period; nothing happens during a solve's pause."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import pytest

from karpy.base.gcpause import gc_paused
from karpy.operator.gcfreeze import GcFreezer
from tests.fixtures.waiting import eventually


class Node:
    """A container the collector tracks and a weak reference can follow."""

    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def cycle() -> weakref.ref[Node]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_first_step_walks_everything_and_freezes_what_lives() -> None:
    freezer = GcFreezer()
    live = [Node() for _ in range(1000)]
    dead = cycle()
    freezer.step()
    assert dead() is None  # collected, not frozen
    assert freezer.full_walks == 1
    assert gc.get_freeze_count() >= len(live)
    walked = {id(o) for generation in range(3) for o in gc.get_objects(generation)}
    assert not any(id(n) in walked for n in live)  # out of every generation collections walk


def test_later_steps_collect_young_garbage_and_freeze_young_survivors() -> None:
    clock = Clock()
    freezer = GcFreezer(clock=clock)
    freezer.step()
    frozen = gc.get_freeze_count()
    clock.now = 5.0
    young = [Node() for _ in range(500)]
    dead = cycle()
    freezer.step()
    assert dead() is None
    assert freezer.full_walks == 1  # nothing doubled, the period has not passed
    assert gc.get_freeze_count() >= frozen + len(young)


def test_a_doubled_frozen_generation_is_walked_in_full_and_its_dead_cycles_freed() -> None:
    clock = Clock()
    freezer = GcFreezer(clock=clock, regrow=2.0)
    freezer.step()
    # A cycle that lives long enough to be frozen, then is dropped: only a full walk
    # (unfreeze, collect) can free it.
    holder = [cycle()]
    strong = holder[0]()
    clock.now = 5.0
    freezer.step()
    assert freezer.full_walks == 1
    del strong
    assert holder[0]() is not None  # frozen garbage waits
    grown = [Node() for _ in range(2 * gc.get_freeze_count())]
    clock.now = 10.0
    freezer.step()  # freezes `grown`: the frozen generation has more than doubled
    clock.now = 15.0
    freezer.step()
    assert freezer.full_walks == 2
    assert holder[0]() is None
    del grown


def test_the_frozen_generation_is_walked_in_full_once_its_period_has_passed() -> None:
    clock = Clock()
    freezer = GcFreezer(clock=clock, full_every=60.0)
    freezer.step()
    clock.now = 59.0
    freezer.step()
    assert freezer.full_walks == 1
    clock.now = 61.0
    freezer.step()
    assert freezer.full_walks == 2


def test_no_step_while_a_solve_holds_the_collector_off() -> None:
    freezer = GcFreezer()
    with gc_paused():
        freezer.step()
    assert freezer.steps == 0
    assert gc.get_freeze_count() == 0


async def test_the_running_freezer_steps_and_leaves_nothing_frozen_when_stopped() -> None:
    freezer = GcFreezer(step=0.01)
    stop = asyncio.Event()
    task = asyncio.create_task(freezer.run(stop))
    await eventually(lambda: freezer.steps >= 2, what="two steps")
    assert gc.get_freeze_count() > 0
    stop.set()
    await task
    assert gc.get_freeze_count() == 0
