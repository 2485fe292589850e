"""`Singleton`: a reconciler with one unit of work and no key.

Provisioning and disruption do not act on one object at a time: a provisioning round
looks at every pending pod, a disruption pass at every node. controller-runtime has no
keyless controllers either, so Karpenter runs such reconcilers through
``singleton.AsReconciler``, which queues an empty request. karpy does the same: a
`SingletonReconciler` says when it wants a run (`SingletonReconciler.wants`, for a state
change; `SingletonReconciler.due`, at a resync) and how to do one, and `Singleton` turns
it into an ordinary `karpy.reconcile.Reconciler` whose only key is `UNIT`.

So a singleton gets everything a keyed controller has, from the same code: triggers that
arrive while it runs are coalesced into one more run (the work queue marks its one key
dirty), a run that raises is retried after a growing backoff, ``requeue_after`` asks for
the next run, metrics are those of every controller, and stopping or losing the lease
stops it the same way. Sources (`karpy.reconcile.source`) feed it `UNIT`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.reconcile.controller import Result
    from karpy.state.cluster import StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["UNIT", "Singleton", "SingletonReconciler", "Unit"]


@attrs.frozen(slots=True)
class Unit:
    """The one key of a singleton controller (controller-runtime's empty request)."""

    def __str__(self) -> str:
        return "singleton"


UNIT: Final = Unit()


class SingletonReconciler(Protocol):
    """One unit of work; see the module docstring."""

    @property
    def name(self) -> str:
        """The controller's name, as metrics and logs show it (``provisioner``)."""
        ...

    @property
    def watches(self) -> frozenset[str]:
        """The kinds (`karpy.state.kinds`) whose changes are passed to `wants`."""
        ...

    def wants(self, change: StateChange[Any]) -> bool:
        """Whether ``change`` calls for a run now (cheap, and free of side effects)."""
        ...

    def due(self, snapshot: StateSnapshot) -> bool:
        """Whether the periodic resync should queue a run (there may be work)."""
        ...

    async def reconcile(self) -> Result:
        """Do one run; raise to be retried with backoff."""
        ...


class Singleton:
    """A `SingletonReconciler` as a `karpy.reconcile.Reconciler` keyed by `UNIT`."""

    def __init__(self, reconciler: SingletonReconciler) -> None:
        self.reconciler = reconciler

    @property
    def name(self) -> str:
        return self.reconciler.name

    @property
    def watches(self) -> frozenset[str]:
        return self.reconciler.watches

    def keys_for(self, change: StateChange[Any]) -> Iterable[Unit]:
        return (UNIT,) if self.reconciler.wants(change) else ()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[Unit]:
        return (UNIT,) if self.reconciler.due(snapshot) else ()

    async def reconcile(self, key: Unit) -> Result:
        return await self.reconciler.reconcile()
