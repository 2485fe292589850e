"""The two orders of a scheduling round: which pod next, and which planned node first.

`PodQueue` is Karpenter's queue: pods sorted by CPU request, then memory request (both
largest first, which packs big pods before small ones fill the gaps), then creation time
and UID (and name, for inputs without UIDs). A pod that fails goes to the back; the round
ends when the queue is empty or every remaining pod was tried since the last success.

`ClaimOrder` keeps the NodeClaims planned this round in the order Karpenter tries them for
the next pod: fewest pods first (spreading pods over the claims opened for pods that need a
node of their own), oldest first among equals. Claims sit in buckets by pod count, so
moving one after an add is a removal and an insertion, not a sort of every claim.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections import deque
from typing import TYPE_CHECKING

from karpy.scheduling.resources import CPU, MEMORY

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

    from karpy.scheduling.pods import Pod

__all__ = ["ClaimOrder", "Lane", "PodQueue", "queue_order"]


def queue_order(pod: Pod) -> tuple[int, int, str, str, str, str]:
    requests = pod.requests
    return (
        -requests.get(CPU, 0),
        -requests.get(MEMORY, 0),
        pod.creation_timestamp,
        pod.uid,
        pod.namespace,
        pod.name,
    )


class PodQueue:
    __slots__ = ("_last_len", "_pods")

    def __init__(self, pods: Iterable[Pod]) -> None:
        self._pods: deque[Pod] = deque(sorted(pods, key=queue_order))
        self._last_len: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def pop(self) -> Pod | None:
        """The next pod, or None when empty or no longer making progress."""
        if not self._pods:
            return None
        pod = self._pods[0]
        if self._last_len.get(id(pod)) == len(self._pods):
            return None
        self._pods.popleft()
        return pod

    def push(self, pod: Pod) -> None:
        self._pods.append(pod)
        self._last_len[id(pod)] = len(self._pods)

    def remaining(self) -> list[Pod]:
        return list(self._pods)


# A claim's values for the keys topology decides by (None: not narrowed to a set), so a
# pod can pass over every claim whose zones its topology refuses at once.
Lane = tuple[frozenset[str] | None, ...]


class _Lane:
    """Claim indices of one lane bucketed by pod count."""

    __slots__ = ("buckets", "counts")

    def __init__(self) -> None:
        self.buckets: dict[int, list[int]] = {}
        self.counts: list[int] = []

    def insert(self, claim: int, pods: int) -> None:
        bucket = self.buckets.get(pods)
        if bucket is None:
            self.buckets[pods] = [claim]
            insort(self.counts, pods)
        else:
            insort(bucket, claim)

    def remove(self, claim: int, pods: int) -> None:
        bucket = self.buckets[pods]
        del bucket[bisect_left(bucket, claim)]
        if not bucket:
            del self.buckets[pods]
            del self.counts[bisect_left(self.counts, pods)]

    def __iter__(self) -> Iterator[int]:
        buckets = self.buckets
        for count in self.counts:
            yield from buckets[count]

    def keyed(self) -> Iterator[tuple[int, int]]:
        buckets = self.buckets
        for count in self.counts:
            for claim in buckets[count]:
                yield count, claim


class ClaimOrder:
    """Claim indices bucketed by pod count; iteration yields fewest-pods-first.

    Claims can also be set aside. A *closed* claim has no room for any pod of the round
    and never comes back. A *parked* claim has less room for one resource than the pod
    being placed needs; it comes back (`unpark`) as soon as a pod asks for no more than
    its room. Pods are queued largest first, so parked claims mostly stay parked until
    the requests shrink, and pods stop walking past nodes they cannot fit on.

    Claims also run in *lanes*: the solver files each claim under what topology decides
    by (the zones it may still be in, say), and a pod whose topology refuses a whole
    lane walks only the others (`among`). Within and across lanes the order is the same
    single order: fewest pods, then oldest.
    """

    __slots__ = ("_lane_of", "_lanes", "_parked", "_pods")

    def __init__(self) -> None:
        self._lanes: dict[Lane, _Lane] = {}
        self._lane_of: dict[int, Lane] = {}  # claim -> lane, kept while parked
        self._pods: dict[int, int] = {}  # claim -> pod count, for claims in the order
        # resource -> heap of (-room, claim, pods): the roomiest parked claim on top
        self._parked: dict[str, list[tuple[int, int, int]]] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def insert(self, claim: int, pods: int, lane: Lane = ()) -> None:
        self._pods[claim] = pods
        self._lane_of[claim] = lane
        holder = self._lanes.get(lane)
        if holder is None:
            holder = self._lanes[lane] = _Lane()
        holder.insert(claim, pods)

    def remove(self, claim: int) -> int:
        pods = self._pods.pop(claim)
        self._lanes[self._lane_of[claim]].remove(claim, pods)
        return pods

    def moved(self, claim: int, pods: int, lane: Lane = ()) -> None:
        """``claim`` now holds ``pods`` pods and belongs to ``lane``."""
        if claim in self._pods:
            self.remove(claim)
        self.insert(claim, pods, lane)

    def park(self, claim: int, pods: int, resource: str, room: int) -> None:
        if claim in self._pods:
            self.remove(claim)
        heapq.heappush(self._parked.setdefault(resource, []), (-room, claim, pods))

    def unpark(self, requests: Mapping[str, int]) -> None:
        """Bring back parked claims with room for ``requests`` in their parked resource."""
        for resource, heap in self._parked.items():
            need = requests.get(resource, 0)
            while heap and -heap[0][0] >= need:
                _, claim, pods = heapq.heappop(heap)
                if claim not in self._pods:
                    self.insert(claim, pods, self._lane_of[claim])

    def __contains__(self, claim: int) -> bool:
        return claim in self._pods

    def lanes(self) -> list[Lane]:
        return [lane for lane, holder in self._lanes.items() if holder.counts]

    def __iter__(self) -> Iterator[int]:
        # Callers stop iterating before they move a claim, so no copies are needed.
        return self.among(None)

    def among(self, lanes: Iterable[Lane] | None) -> Iterator[int]:
        """The claims of ``lanes`` (None: every lane), in the one order."""
        holders = (
            [h for h in self._lanes.values() if h.counts]
            if lanes is None
            else [h for lane in lanes if (h := self._lanes.get(lane)) is not None and h.counts]
        )
        if len(holders) == 1:
            return iter(holders[0])
        return (claim for _, claim in heapq.merge(*(h.keyed() for h in holders)))
