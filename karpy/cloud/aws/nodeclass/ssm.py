"""SSM parameters that name AMIs, read through a small cache.

EKS publishes its AMIs as public SSM parameters (``/aws/service/eks/optimized-ami/...``,
``/aws/service/bottlerocket/...``); an alias such as ``al2023@latest`` is resolved by
reading them, and an ``ssmParameter`` term names one directly. How long an answer may be
reused depends on what the parameter is:

* a **versioned** alias (``al2023@v20240807``) names an AMI that never changes: kept a
  day, as Karpenter keeps every SSM answer;
* a **latest** alias (``recommended``, ``latest``) moves with every release: kept for
  less than the shortest AMI refresh interval (one minute), so every periodic resolution
  reads it again and a new release is picked up on the next refresh — Karpenter keeps
  these a day too and relies on a separate invalidation pass, which karpy does not need;
* a user's own parameter (``ssmParameter``) is kept five minutes, as Karpenter does.

A parameter that does not exist is an answer (None), cached like any other, so a missing
variant (there is no arm64 Neuron AMI) costs one call per period, not one per reconcile.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from karpy.base.clock import SYSTEM_CLOCK
from karpy.log import get_logger

if TYPE_CHECKING:
    from karpy.base.clock import Clock
    from karpy.cloud.aws.clients import AWSClients

__all__ = ["ParameterCache", "ParameterKind"]

log = get_logger("aws.nodeclass.ssm")

_NOT_FOUND: Final = frozenset({"ParameterNotFound", "ParameterVersionNotFound"})


class ParameterKind(enum.Enum):
    VERSIONED = 24 * 3600.0  # seconds an answer is kept
    LATEST = 30.0
    CUSTOM = 300.0


class ParameterCache:
    """``GetParameter`` answers (the value, or None for a missing parameter), kept as long
    as their `ParameterKind` allows."""

    def __init__(self, clients: AWSClients, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clients = clients
        self.clock = clock
        self._answers: dict[str, tuple[float, str | None]] = {}  # name -> (expiry, value)
        self.calls = 0  # GetParameter calls made (for tests and debugging)

    async def get(self, name: str, kind: ParameterKind) -> str | None:
        """The parameter's value, or None when it does not exist. Other errors raise."""
        now = self.clock.monotonic()
        cached = self._answers.get(name)
        if cached is not None and cached[0] > now:
            return cached[1]
        ssm: Any = await self.clients.ssm()
        self.calls += 1
        try:
            answer = await ssm.get_parameter(Name=name)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in _NOT_FOUND:
                raise
            value = None
        else:
            value = str(answer["Parameter"]["Value"])
            if cached is None or cached[1] != value:
                log.debug("discovered ssm parameter", parameter=name, value=value)
        self._answers[name] = (now + kind.value, value)
        return value

    def invalidate(self) -> None:
        self._answers.clear()
