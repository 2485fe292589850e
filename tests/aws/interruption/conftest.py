"""Fixtures of the interruption tests: a moto server of their own (they need only SQS
and DescribeInstanceStatus, and so leave the shared EC2 account fixture alone) and
`AWSClients` on it. Each test uses its own queue name and its own instances, so nothing
needs resetting."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from moto.server import ThreadedMotoServer

from karpy.cloud.aws.clients import AWSClients

REGION = "us-west-2"


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
async def moto_clients(moto_endpoint: str) -> AsyncIterator[AWSClients]:
    clients = AWSClients(REGION, endpoint_url=moto_endpoint, credentials=("testing", "testing"))
    try:
        yield clients
    finally:
        await clients.aclose()
