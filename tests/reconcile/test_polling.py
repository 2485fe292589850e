"""`PollingSource`: ask at an interval, queue the answer, wait for the work; run by a real
`Controller` on a fake clock."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import TYPE_CHECKING, Any

from karpy.kube.backoff import Backoff
from karpy.reconcile import DONE, Controller, PollingSource
from tests.kube.fakeclock import FakeClock
from tests.reconcile.singletons import settle, step, synced_state

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from karpy.reconcile import Result
    from karpy.state.cluster import StateChange
    from karpy.state.snapshot import StateSnapshot


class Messages:
    """Reconciles the keys a poll hands it (say, received messages); ``gate`` holds each."""

    name = "test.messages"
    watches: frozenset[str] = frozenset()

    def __init__(self) -> None:
        self.handled: list[str] = []
        self.gate: asyncio.Event | None = None

    def keys_for(self, change: StateChange[Any]) -> Iterable[str]:
        return ()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[str]:
        return ()

    async def reconcile(self, key: str) -> Result:
        if self.gate is not None:
            await self.gate.wait()
        self.handled.append(key)
        return DONE


class Remote:
    """The outside world a source polls: scripted answers (or failures), each poll's fake
    time noted; once they run out a poll waits for ever (a long poll with nothing to
    say)."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.answers: list[list[str] | Exception] = []
        self.polled_at: list[float] = []
        self.cancelled = False

    async def poll(self) -> list[str]:
        self.polled_at.append(self.clock.monotonic() - 1000.0)
        if not self.answers:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class HalfRandom(random.Random):
    def random(self) -> float:
        return 0.5


@contextlib.asynccontextmanager
async def polling(
    remote: Remote, messages: Messages, clock: FakeClock, *, interval: float,
    jitter: float = 0.0,
) -> AsyncIterator[asyncio.Task[None]]:  # fmt: skip
    source = PollingSource("remote", remote.poll, interval=interval, jitter=jitter, clock=clock,
                           backoff=Backoff(1.0, 8.0, jitter=0.0, clock=clock),
                           rng=HalfRandom())  # fmt: skip
    controller = Controller(messages, synced_state(), sources=[source], resync=None,
                            workers=4, clock=clock)  # fmt: skip
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    await controller.started.wait()
    await settle()
    try:
        yield task
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)


async def test_each_answer_is_worked_through_before_the_interval_and_the_next_poll():
    clock = FakeClock()
    remote, messages = Remote(clock), Messages()
    remote.answers = [["m1", "m2"], ["m3"]]  # then it waits
    messages.gate = asyncio.Event()
    async with polling(remote, messages, clock, interval=60):
        assert remote.polled_at == [0.0], "polled as soon as the controller started"
        await step(clock, 120)
        assert remote.polled_at == [0.0], "not again while its answer is being handled"
        messages.gate.set()
        await step(clock, 0)
        assert sorted(messages.handled) == ["m1", "m2"]
        await step(clock, 59.9)
        assert remote.polled_at == [0.0]
        await step(clock, 0.2)
        assert remote.polled_at == [0.0, 180.0], "one interval after the work was done"
        assert sorted(messages.handled) == ["m1", "m2", "m3"]


async def test_a_zero_interval_polls_again_as_soon_as_the_work_is_done():
    clock = FakeClock()
    remote, messages = Remote(clock), Messages()
    remote.answers = [["m1"], ["m2"]]
    async with polling(remote, messages, clock, interval=0):
        await settle()
        assert messages.handled == ["m1", "m2"]
        assert remote.polled_at == [0.0, 0.0, 0.0]


async def test_the_interval_is_stretched_by_the_jitter():
    clock = FakeClock()
    remote, messages = Remote(clock), Messages()
    remote.answers = [[], []]
    async with polling(remote, messages, clock, interval=60, jitter=0.2):
        await step(clock, 65.9)
        assert remote.polled_at == [0.0]
        await step(clock, 0.2)
        assert remote.polled_at == [0.0, 66.0]


async def test_a_failing_poll_is_retried_after_a_growing_backoff_reset_by_an_answer():
    clock = FakeClock()
    remote, messages = Remote(clock), Messages()
    failure = RuntimeError("throttled")
    remote.answers = [failure, failure, failure, ["m1"], failure, []]
    async with polling(remote, messages, clock, interval=100):
        for seconds in (1, 2, 4):
            await step(clock, seconds)
        assert remote.polled_at == [0.0, 1.0, 3.0, 7.0]
        assert messages.handled == ["m1"]
        await step(clock, 100)
        assert remote.polled_at[-1] == 107.0
        await step(clock, 1)
        assert remote.polled_at[-1] == 108.0, "the backoff started over after an answer"


async def test_stopping_cancels_a_poll_in_flight_at_once():
    clock = FakeClock()
    remote, messages = Remote(clock), Messages()
    async with polling(remote, messages, clock, interval=0) as task:
        assert remote.polled_at == [0.0]
    assert task.done()
    assert remote.cancelled, "the long poll did not hold the stop up"
