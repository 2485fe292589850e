"""`Source`: a feeder of work from outside the informers.

Most controllers learn what to do from cluster state: the `Controller` queues the keys a
change concerns, and every key again at each resync. Some work comes from elsewhere or
follows its own timing: pending pods are gathered into batching windows before a
provisioning round (`karpy.reconcile.batching.BatchingSource`), an SQS queue or an EC2
status API is asked at intervals (`karpy.reconcile.polling.PollingSource`). A source is
controller-runtime's idea of the same name: something the controller runs beside its
workers that puts keys on its queue.

A source runs only while its controller runs (after state has synced, while this process
leads) and is cancelled when the controller stops, whether cleanly or by losing the lease;
it keeps no work of its own across runs. It feeds the queue through a `Feed` (the
controller), so queueing, coalescing, backoff, metrics and stopping stay in one place.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["Feed", "Source"]

K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)
K_co = TypeVar("K_co", bound=Hashable, covariant=True)


class Feed(Protocol[K_contra]):
    """Where a source puts its work: the controller's queue."""

    def add(self, key: K_contra) -> None:
        """Queue ``key`` (once, however often it is added before a worker takes it)."""
        ...

    async def settled(self, keys: Iterable[K_contra]) -> None:
        """Wait until ``keys`` are neither queued nor being reconciled."""
        ...


class Source(Protocol[K_co]):
    """Feeds a controller's queue until cancelled."""

    @property
    def name(self) -> str:
        """What the source is, for task names and logs (``batching``, ``poll``)."""
        ...

    async def run(self, feed: Feed[K_co]) -> None:
        """Put keys on ``feed`` as work arises; runs until cancelled."""
        ...
