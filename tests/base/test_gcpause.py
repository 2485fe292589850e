"""The garbage collector pause: counted across overlapping holders and threads, and
never turning on a collector that was off."""

from __future__ import annotations

import gc
import threading

from karpy.base.gcpause import gc_paused


def test_the_collector_is_off_while_any_holder_is_inside() -> None:
    gc.enable()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled(), "the outer holder is still inside"
    assert gc.isenabled()


def test_holders_on_other_threads_keep_it_off_until_the_last_one_leaves() -> None:
    gc.enable()
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        with gc_paused():
            entered.set()
            release.wait(5)

    worker = threading.Thread(target=hold)
    worker.start()
    entered.wait(5)
    with gc_paused():
        pass
    assert not gc.isenabled(), "the worker still holds the pause"
    release.set()
    worker.join(5)
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
