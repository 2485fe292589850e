"""`EC2Faults`: the capacity and throttling faults a moto-backed sandbox can inject.

Real EC2 fails in two ways an autoscaler must survive and moto never reproduces: an
instant fleet whose offerings have no capacity answers HTTP 200 with
``InsufficientInstanceCapacity`` entries in ``Errors[]``, and a busy account answers
``RequestLimitExceeded`` (HTTP 503) until the SDK's retries back off enough. This object
only *records* what should fail; the patched CreateFleet (`karpy.sandbox.aws.fleet`)
reads the ICE set and the WSGI wrapper of the moto server (`karpy.sandbox.aws.server`)
consumes the throttle budget. It is shared between the server's request threads and
the test (or the sandbox's HTTP route) that sets it, hence the lock.

An offering is ``(instance type, zone, capacity type)``; ``"*"`` in any position matches
everything (``("*", "us-west-2a", "spot")`` is a zone-wide spot outage). An outage answers
``InsufficientInstanceCapacity`` unless another code is given (``SpotMaxPriceTooLow``,
``VcpuLimitExceeded``, ...: every code an autoscaler reads as "no capacity here").
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["ICE_CODE", "CapacityPool", "EC2Faults"]

CapacityPool = tuple[str, str, str]  # (instance type, zone, capacity type)
WILDCARD = "*"
ICE_CODE = "InsufficientInstanceCapacity"


class EC2Faults:
    """ICE per offering and "throttle the next N calls of an action" (module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ice: dict[CapacityPool, str] = {}  # offering → the error code it answers
        self._throttle: dict[str, int] = {}
        self.throttled: dict[str, int] = {}

    def ice(self, offerings: Iterable[Iterable[str]], code: str = ICE_CODE) -> None:
        """Make these offerings (type, zone, capacity type) unavailable until `clear`,
        failing with ``code``."""
        with self._lock:
            for offering in offerings:
                instance_type, zone, capacity_type = offering
                self._ice[(instance_type, zone, capacity_type)] = code

    def restore(self, offerings: Iterable[Iterable[str]]) -> None:
        """Give capacity back to these offerings."""
        with self._lock:
            for offering in offerings:
                instance_type, zone, capacity_type = offering
                self._ice.pop((instance_type, zone, capacity_type), None)

    def is_unavailable(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        return self.capacity_error(instance_type, zone, capacity_type) is not None

    def capacity_error(self, instance_type: str, zone: str, capacity_type: str) -> str | None:
        """The error code a launch of this offering fails with (None: it has capacity)."""
        pool = (instance_type, zone, capacity_type)
        with self._lock:
            return next((code for rule, code in self._ice.items() if _matches(rule, pool)), None)

    def throttle(self, action: str, count: int) -> None:
        """Answer the next ``count`` calls of ``action`` (``CreateFleet``, or ``*``) with
        ``RequestLimitExceeded``."""
        with self._lock:
            self._throttle[action] = self._throttle.get(action, 0) + count

    def take_throttle(self, action: str) -> bool:
        """Whether this call of ``action`` must be throttled (uses one unit of budget)."""
        with self._lock:
            for key in (action, WILDCARD):
                left = self._throttle.get(key, 0)
                if left > 0:
                    self._throttle[key] = left - 1
                    self.throttled[action] = self.throttled.get(action, 0) + 1
                    return True
            return False

    def clear(self) -> None:
        """Forget every injected fault and the throttle counts."""
        with self._lock:
            self._ice.clear()
            self._throttle.clear()
            self.throttled.clear()

    def apply(self, body: Mapping[str, Any]) -> None:
        """Apply a JSON request of the sandbox's fault route: ``{"clear": true, "ice":
        [[type, zone, capacity type], ...], "restore": [...], "throttle": {action: n}}``.
        Raises `ValueError` on a malformed body."""
        try:
            if body.get("clear"):
                self.clear()
            ice = [_pool(o) for o in body.get("ice", [])]
            restore = [_pool(o) for o in body.get("restore", [])]
            throttle = {str(k): int(v) for k, v in dict(body.get("throttle", {})).items()}
        except (TypeError, ValueError) as error:
            raise ValueError(f"bad fault request: {error}") from error
        self.ice(ice)
        self.restore(restore)
        for action, count in throttle.items():
            self.throttle(action, count)

    def describe(self) -> dict[str, Any]:
        """The current faults, as the fault route answers them."""
        with self._lock:
            return {
                "ice": sorted(list(o) for o in self._ice),
                "throttle": dict(self._throttle),
                "throttled": dict(self.throttled),
            }


def _matches(rule: CapacityPool, pool: CapacityPool) -> bool:
    return all(r in (WILDCARD, o) for r, o in zip(rule, pool, strict=True))


def _pool(raw: Any) -> CapacityPool:
    values = [str(v) for v in raw]
    if len(values) != 3:
        raise ValueError(f"an offering is [type, zone, capacity type], got {raw!r}")
    return values[0], values[1], values[2]
