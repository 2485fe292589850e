"""Faults a test or an operator can inject into the fake cloud.

* **Insufficient capacity per offering**: ``FAKE_INSUFFICIENT_CAPACITY`` lists
  ``TYPE:ZONE:CAPACITY-TYPE`` patterns (``*`` matches anything, ``c-*`` a prefix); a
  launch never gets an offering that matches one, exactly as if EC2 answered
  ``InsufficientInstanceCapacity`` for it.
* **Failures per call**: `FakeFaults.fail` makes the next ``count`` calls of a provider
  method raise the given error (a `CreateError` by default), for tests of retries and
  backoff.
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

from karpy.cloud.errors import CreateError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.scheduling.instancetypes import CapacityPool

__all__ = ["FakeFaults"]


class FakeFaults:
    def __init__(self, insufficient: Iterable[CapacityPool] = ()) -> None:
        self.insufficient = tuple(insufficient)
        self._failures: dict[str, list[Exception]] = {}

    def no_capacity(self, pool: CapacityPool) -> bool:
        """Does the cloud answer "insufficient capacity" for ``pool``?"""
        return any(
            all(fnmatch.fnmatchcase(value, glob) for value, glob in zip(pool, p, strict=True))
            for p in self.insufficient
        )

    def fail(self, method: str, count: int = 1, error: Exception | None = None) -> None:
        """Make the next ``count`` calls of ``method`` (``create``, ``delete``, ``get``,
        ``list``, ``get_instance_types``) raise ``error``."""
        exc = error or CreateError(f"injected {method} failure", "InjectedFailure")
        self._failures.setdefault(method, []).extend([exc] * count)

    def check(self, method: str) -> None:
        """Raise the next failure injected for ``method``, if any."""
        pending = self._failures.get(method)
        if pending:
            raise pending.pop(0)
