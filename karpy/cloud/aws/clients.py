"""`AWSClients`: the aiobotocore clients of one process, opened on first use.

Every AWS call karpy makes goes through these clients. They follow the standard botocore
chain: credentials from the environment, profiles, IRSA or pod identity; the endpoint from
``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_<SERVICE>``) when set, which is how the sandbox
and the tests point karpy at a moto server; the region from ``AWS_REGION`` (or
``AWS_DEFAULT_REGION``, or the profile). Throttling and transient errors are retried in
botocore's ``standard`` mode. A client is created on its first use, under a lock, and
kept for the life of the process; `aclose` closes them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import TYPE_CHECKING, Any, Final

from aiobotocore.config import AioConfig
from aiobotocore.session import AioSession, get_session

from karpy.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["PRICING_REGIONS", "AWSClients", "region_from_env"]

MAX_ATTEMPTS: Final = 8
MAX_POOL_CONNECTIONS: Final = 50
# The Pricing API lives in a few regions only; Karpenter asks us-east-1 (ap-south-1 for
# regions in Asia, cn-northwest-1 for China).
PRICING_REGIONS: Final = {"ap": "ap-south-1", "cn": "cn-northwest-1"}


def region_from_env(env: Mapping[str, str] | None = None) -> str:
    """``AWS_REGION``, else ``AWS_DEFAULT_REGION``, else the botocore profile's region;
    `UsageError` when none is set (karpy does not guess a region)."""
    env = os.environ if env is None else env
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        return region
    profile_region = get_session().get_config_variable("region")
    if profile_region:
        return str(profile_region)
    raise UsageError("AWS_REGION is not set: the AWS provider needs the cluster's region "
                     "(set AWS_REGION, or CLOUD_PROVIDER=fake for a sandbox)")  # fmt: skip


def pricing_region(region: str) -> str:
    """The region whose Pricing API endpoint serves ``region``'s prices."""
    prefix = region.split("-", 1)[0]
    return PRICING_REGIONS.get(prefix, "us-east-1")


class AWSClients:
    """Lazily opened aiobotocore clients for ``region`` (see the module docstring).

    ``endpoint_url`` overrides the endpoint of every service (tests pass a moto server's
    URL); None leaves it to botocore (``AWS_ENDPOINT_URL``). ``endpoints`` overrides it per
    service (``{"pricing": url}``: moto has no Pricing API, the tests serve a stub).
    ``credentials`` (access key, secret key) override the chain, for tests. ``session``
    shares one botocore session (its loaded service models) between several of these.
    """

    def __init__(
        self,
        region: str,
        *,
        endpoint_url: str | None = None,
        endpoints: Mapping[str, str] | None = None,
        credentials: tuple[str, str] | None = None,
        max_attempts: int = MAX_ATTEMPTS,
        session: AioSession | None = None,
    ) -> None:
        self.region = region
        self.endpoint_url = endpoint_url
        self.endpoints = dict(endpoints or {})
        self.credentials = credentials
        self.config = AioConfig(
            retries={"mode": "standard", "max_attempts": max_attempts},
            max_pool_connections=MAX_POOL_CONNECTIONS,
        )
        self._session = session or get_session()
        self._stack = contextlib.AsyncExitStack()
        self._clients: dict[tuple[str, str], Any] = {}
        self._lock = asyncio.Lock()

    async def client(self, service: str, region: str | None = None) -> Any:
        """The client for ``service`` (``ec2``, ``ssm``, ``iam``, ``sqs``, ``pricing``,
        ``eks``) in ``region`` (default: the cluster's)."""
        key = (service, region or self.region)
        found = self._clients.get(key)
        if found is not None:
            return found
        async with self._lock:
            found = self._clients.get(key)
            if found is None:
                kwargs: dict[str, Any] = {"region_name": key[1], "config": self.config}
                endpoint = self.endpoints.get(service, self.endpoint_url)
                if endpoint:
                    kwargs["endpoint_url"] = endpoint
                if self.credentials:
                    kwargs["aws_access_key_id"], kwargs["aws_secret_access_key"] = self.credentials
                creator = self._session.create_client(service, **kwargs)
                found = await self._stack.enter_async_context(creator)
                self._clients[key] = found
        return found

    async def ec2(self) -> Any:
        return await self.client("ec2")

    async def ssm(self) -> Any:
        return await self.client("ssm")

    async def iam(self) -> Any:
        return await self.client("iam")

    async def sqs(self) -> Any:
        return await self.client("sqs")

    async def pricing(self) -> Any:
        return await self.client("pricing", pricing_region(self.region))

    async def aclose(self) -> None:
        """Close every client opened so far."""
        async with self._lock:
            self._clients.clear()
            await self._stack.aclose()
            self._stack = contextlib.AsyncExitStack()
