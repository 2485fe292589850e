"""The cluster's Kubernetes minor version (``1.31``), which AMI aliases need: EKS
publishes its AMIs per Kubernetes version.

It comes from the API server's ``/version`` (``{"major": "1", "minor": "31+"}``; the
``+`` some distributions add is dropped), asked again every five minutes as Karpenter
does, so an upgraded control plane moves aliases to the new AMIs. A fixed value (the
``karpy instance-types`` CLI without a cluster) skips the API entirely.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.base.clock import SYSTEM_CLOCK
from karpy.log import get_logger

if TYPE_CHECKING:
    from karpy.base.clock import Clock
    from karpy.kube.client import KubeClient

__all__ = ["KubernetesVersion", "parse_server_version", "server_version"]

log = get_logger("aws.nodeclass.version")

REFRESH: Final = 300.0  # seconds


def parse_server_version(answer: dict[str, Any]) -> str:
    """``major.minor`` of a ``/version`` answer."""
    major = str(answer.get("major", "")).rstrip("+")
    minor = str(answer.get("minor", "")).rstrip("+")
    if not major.isdigit() or not minor.isdigit():
        raise ValueError(f"unexpected Kubernetes version {answer.get('gitVersion', answer)!r}")
    return f"{major}.{minor}"


async def server_version(client: KubeClient) -> str:
    """The API server's ``major.minor``."""
    answer = await client.request("get", "GET", "/version", idempotent=True)
    return parse_server_version(answer)


class KubernetesVersion:
    """The cluster's version, read from ``client`` at most every `REFRESH` seconds, or
    the ``fixed`` one."""

    def __init__(
        self,
        client: KubeClient | None = None,
        *,
        fixed: str | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if client is None and fixed is None:
            raise ValueError("a Kubernetes version needs an API client or a fixed value")
        self.client = client
        self.fixed = fixed
        self.clock = clock
        self._value: str | None = None
        self._expires = 0.0

    async def get(self) -> str:
        if self.fixed is not None:
            return self.fixed
        assert self.client is not None
        now = self.clock.monotonic()
        if self._value is None or now >= self._expires:
            value = await server_version(self.client)
            if value != self._value:
                log.info("discovered kubernetes version", version=value)
            self._value, self._expires = value, now + REFRESH
        return self._value
