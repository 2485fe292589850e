"""Fixtures of the instance-type tests: the full moto catalogue, fetched once per session
(DescribeInstanceTypes takes seconds in moto). EC2NodeClass builders are in `factories`."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from karpy.cloud.aws.clients import AWSClients
from karpy.cloud.aws.instancetypes.catalog import Catalog, fetch_catalog
from tests.aws.conftest import CREDENTIALS, REGION

if TYPE_CHECKING:
    from karpy.sandbox.aws.server import MotoServer


@pytest.fixture(scope="session")
def moto_catalog(moto_server: MotoServer) -> Catalog:
    """The full catalogue, fetched from moto once, through `fetch_catalog`."""

    async def fetch() -> Catalog:
        clients = AWSClients(REGION, endpoint_url=moto_server.url, credentials=CREDENTIALS)
        try:
            return await fetch_catalog(await clients.ec2())
        finally:
            await clients.aclose()

    return asyncio.run(fetch())
