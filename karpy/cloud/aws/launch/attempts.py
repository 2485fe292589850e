"""Launch attempts: the ``ClientToken`` of each NodeClaim's CreateFleet, so a launch whose
answer was lost and is retried cannot start a second instance.

Before launching, `InstanceLauncher` looks for an instance already tagged with the
NodeClaim; but DescribeInstances is eventually consistent, and an instance launched a
moment ago by a CreateFleet whose answer never arrived (a dropped connection, a timeout, a
5xx, a cancelled task) may not show yet. EC2's own guard is the client token: a CreateFleet
repeating the token and the parameters of an earlier one answers that request's result
again and launches nothing; the same token with other parameters is refused with
``IdempotentParameterMismatch``. Tokens are ``karpy-<NodeClaim UID>-<attempt>`` (at most 64
ASCII characters, as EC2 requires).

What decides whether the next CreateFleet of a NodeClaim reuses the token:

* **Answer unknown** (no HTTP answer, a 5xx, throttling): the request stays *pending* and
  the next launch of the NodeClaim resends it unchanged (same token, same parameters, even
  if prices or unavailable offerings have changed since), so EC2 returns what the first
  one did.
* **Launched**: the request stays too; a launch repeated before the NodeClaim records its
  instance (a failed status write) gets the same instance back.
* **Definitively failed** (an answer with no instance, such as ``Errors[]`` of capacity;
  a 4xx refusal, such as a missing launch template): the attempt number advances; the
  next launch is a new request with a new token.
* **IdempotentParameterMismatch**: EC2 knows the token from a request this process no
  longer remembers (it restarted, or forgot the NodeClaim). That request may have
  launched, so the token is kept — each launch fails, retryably, and its tag lookup runs
  again — until `MISMATCH_WAIT` has passed since the first mismatch; then the attempt
  advances.
* A pending request older than `PENDING_TTL` is dropped and the attempt advances: by then
  the tag lookup sees whatever it launched.

Memory holds one entry per NodeClaim, least recently used dropped beyond `MAX_TRACKED`.
The launch templates named by requests in flight or whose answer was lost are *in use*:
the template garbage collector never deletes them (`templates_in_use`).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.base.clock import SYSTEM_CLOCK

if TYPE_CHECKING:
    from datetime import datetime

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.base.clock import Clock

__all__ = [
    "MAX_TRACKED",
    "MISMATCH_WAIT",
    "PENDING_TTL",
    "LaunchAttempts",
    "PendingLaunch",
    "client_token",
]

MAX_TRACKED: Final = 10_000
PENDING_TTL: Final = timedelta(minutes=15)
MISMATCH_WAIT: Final = timedelta(minutes=2)
_TOKEN_LIMIT: Final = 64
_PREFIX: Final = "karpy-"


def client_token(nodeclaim_key: str, attempt: int) -> str:
    """``karpy-<key>-<attempt>``; the key hashed when that would not fit EC2's 64 ASCII
    characters."""
    token = f"{_PREFIX}{nodeclaim_key}-{attempt}"
    if len(token) <= _TOKEN_LIMIT and token.isascii() and token.isprintable():
        return token
    digest = hashlib.sha256(nodeclaim_key.encode()).hexdigest()[:40]
    return f"{_PREFIX}{digest}-{attempt}"


def nodeclaim_key(nodeclaim: NodeClaim) -> str:
    """The NodeClaim's UID (its name for objects that have none, as in tests)."""
    return nodeclaim.metadata.uid or nodeclaim.name


@attrs.frozen(slots=True, kw_only=True)
class PendingLaunch:
    """A CreateFleet sent for a NodeClaim, to be resent unchanged."""

    token: str
    request: dict[str, Any]
    capacity_type: str
    templates: tuple[str, ...]
    sent: datetime


@attrs.define(slots=True)
class _Entry:
    attempt: int = 0
    pending: PendingLaunch | None = None
    launched: bool = False  # the pending request was answered with an instance
    mismatch_since: datetime | None = None


class LaunchAttempts:
    """Per NodeClaim: the attempt number and the request to resend (module docstring)."""

    def __init__(
        self,
        *,
        clock: Clock = SYSTEM_CLOCK,
        max_tracked: int = MAX_TRACKED,
        pending_ttl: timedelta = PENDING_TTL,
        mismatch_wait: timedelta = MISMATCH_WAIT,
    ) -> None:
        self.clock = clock
        self.max_tracked = max_tracked
        self.pending_ttl = pending_ttl
        self.mismatch_wait = mismatch_wait
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def _entry(self, key: str) -> _Entry:
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
            while len(self._entries) > self.max_tracked:
                self._entries.popitem(last=False)
        self._entries.move_to_end(key)
        return entry

    def pending(self, nodeclaim: NodeClaim) -> PendingLaunch | None:
        """The request to resend for ``nodeclaim``, unless it is older than the TTL."""
        entry = self._entries.get(nodeclaim_key(nodeclaim))
        if entry is None or entry.pending is None:
            return None
        if self.clock.now() - entry.pending.sent > self.pending_ttl:
            entry.pending = None
            entry.attempt += 1
            return None
        return entry.pending

    def begin(
        self,
        nodeclaim: NodeClaim,
        request: dict[str, Any],
        *,
        capacity_type: str,
        templates: tuple[str, ...],
    ) -> PendingLaunch:
        """Record a new request for ``nodeclaim`` (with the current attempt's token) before
        it is sent."""
        key = nodeclaim_key(nodeclaim)
        entry = self._entry(key)
        pending = PendingLaunch(
            token=client_token(key, entry.attempt),
            request={**request, "ClientToken": client_token(key, entry.attempt)},
            capacity_type=capacity_type,
            templates=templates,
            sent=self.clock.now(),
        )
        entry.pending = pending
        entry.launched = False
        return pending

    def failed(self, nodeclaim: NodeClaim) -> None:
        """EC2 answered and launched nothing: the next launch is a new attempt."""
        entry = self._entry(nodeclaim_key(nodeclaim))
        entry.pending = None
        entry.mismatch_since = None
        entry.attempt += 1

    def launched(self, nodeclaim: NodeClaim) -> None:
        """EC2 answered with an instance: keep the request, a repeat gets the same one."""
        entry = self._entry(nodeclaim_key(nodeclaim))
        entry.launched = True
        entry.mismatch_since = None

    def mismatched(self, nodeclaim: NodeClaim) -> bool:
        """EC2 knows the token from another request; True once `mismatch_wait` has passed
        since the first mismatch, and the attempt advanced."""
        entry = self._entry(nodeclaim_key(nodeclaim))
        entry.pending = None
        now = self.clock.now()
        if entry.mismatch_since is None:
            entry.mismatch_since = now
        if now - entry.mismatch_since < self.mismatch_wait:
            return False
        entry.mismatch_since = None
        entry.attempt += 1
        return True

    def forget(self, nodeclaim: NodeClaim) -> None:
        self._entries.pop(nodeclaim_key(nodeclaim), None)

    def templates_in_use(self) -> set[str]:
        """The launch templates named by requests in flight or whose answer was lost (a
        launched request is resent only in the moments before its NodeClaim records the
        instance, which the template collector's idle time covers)."""
        now = self.clock.now()
        return {
            name
            for entry in self._entries.values()
            if entry.pending is not None and not entry.launched
            and now - entry.pending.sent <= self.pending_ttl
            for name in entry.pending.templates
        }  # fmt: skip
