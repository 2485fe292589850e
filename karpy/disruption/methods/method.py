"""`Method`: what the disruption controller asks of each way of disrupting nodes
(Karpenter's ``disruption.Method`` interface).

A pass tries the methods in order and the first that yields a command wins. For each,
the controller takes the candidates the method wants (`Method.should_disrupt`, among
the candidates of its `DisruptionClass`), the NodePools' budgets for the method's
`Method.reason`, asks whether the method runs at all on these inputs
(`Method.should_run`), and then for its command (`Method.compute_command`). Everything
a method needs to know between passes (consolidation's "nothing found on these inputs")
it keeps itself; the controller keeps none of it.

The `DisruptionClass` is Karpenter's: a *graceful* method (emptiness, consolidation)
only takes candidates nothing blocks and waits while capacity a scale-up asked for is
arriving; an *eventual* one (drift) also takes nodes blocked only by their pods when
their NodeClaim has a ``terminationGracePeriod`` (the drain ends by then whatever the pods
say), and does not wait. Node repair's class is its own (`DisruptionClass.REPAIR`).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.apis.disruption import DisruptionReason
    from karpy.disruption.candidates import Candidate
    from karpy.disruption.methods.command import ConsolidationType, Outcome
    from karpy.disruption.simulation import WhatIf

__all__ = ["DisruptionClass", "Method"]


class DisruptionClass(enum.Enum):
    """Which candidates a method may take, and whether it waits for arriving capacity."""

    GRACEFUL = "graceful"
    EVENTUAL = "eventual"
    # Node repair: also takes nodes disruption leaves alone for do-not-disrupt (Node,
    # NodeClaim or pod), PodDisruptionBudgets or nominations, when they are unhealthy
    # (`karpy.disruption.candidates.Blocked.repairable`); does not wait.
    REPAIR = "repair"


class Method(Protocol):
    """One way of disrupting nodes (see the module docstring)."""

    @property
    def reason(self) -> DisruptionReason:
        """The budget reason it spends (and the reason its commands give)."""

    @property
    def consolidation_type(self) -> ConsolidationType:
        """Its label on the decision metrics."""

    @property
    def disruption_class(self) -> DisruptionClass: ...

    @property
    def simulates(self) -> bool:
        """Does it run what-if rounds? Then it is computed in a worker thread."""

    @property
    def refusal_event(self) -> str:
        """The Event reason for the candidates it looked at and could not act on."""

    def should_disrupt(self, candidate: Candidate) -> bool:
        """Does it take this candidate at all (budgets aside)?"""

    def should_run(self, what_if: WhatIf, budgets: Mapping[str, int]) -> bool:
        """Is it worth computing on these inputs (it has candidates)?"""

    def compute_command(
        self, candidates: Sequence[Candidate], budgets: dict[str, int], what_if: WhatIf
    ) -> Outcome:
        """At most one command over ``candidates``, within ``budgets`` (per NodePool, how
        many nodes may start being disrupted; the method's own copy)."""
