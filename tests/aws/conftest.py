"""Shared moto fixtures for the AWS provider's tests (built on `karpy.sandbox.aws`).

- ``moto_server`` (session): a `MotoServer` on 127.0.0.1 — ``.url`` (moto), ``.pricing_url``
  (Pricing API stub), ``.faults``, ``.prices`` (the `PriceTable` behind spot prices,
  CreateFleet choices and the stub).
- ``aws_account`` (function): moto reset, then seeded as EKS cluster "test-cluster" in
  us-west-2; an `Account` (``.region``, ``.cluster_name``, ``.vpc_id``, ``.subnets`` zone ->
  id for us-west-2a/b/c, ``.security_group_id``, ``.role_name``, ``.amis`` family -> {arch ->
  id}, ``.previous_amis``, ``.ami_versions``, ``.k8s_version`` "1.31", ``.cluster_endpoint``...).
- ``aws_clients`` (function): an `AWSClients` for us-west-2 on moto (pricing on the stub),
  credentials ("testing", "testing"), closed after the test.
- ``ec2_faults`` (function): the server's `EC2Faults` (``.ice([(type, zone, capacity type)])``,
  ``.throttle(action, n)``, ``.clear()``), cleared before and after the test.
- ``moto_catalog`` (session): moto's whole instance-type `Catalog` for us-west-2, fetched
  through `fetch_catalog` once per run (~2 s of CPU: ~6 MB of XML to render and parse)
  and kept pickled beside moto's rendered answers (`shared_moto_catalogue`), where the
  run's other workers read it (~15 ms). It is immutable, so a test that is not about
  fetching hands it to its provider (``catalog=``) instead of having the provider fetch
  its own copy.
- ``one_root_ca_bundle`` (session, automatic): the CA bundle of the shared botocore
  session, one root instead of the default ~150 (the tests' clients never use TLS, but
  each loaded the whole bundle).
"""

from __future__ import annotations

import asyncio
import os
import pickle
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from aiobotocore.session import get_session
from botocore.httpsession import get_cert_path

from karpy.cloud.aws.clients import AWSClients
from karpy.cloud.aws.instancetypes.catalog import Catalog, fetch_catalog
from karpy.sandbox.aws.seed import Account, seed_account
from karpy.sandbox.aws.server import MotoServer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from karpy.sandbox.aws.faults import EC2Faults

REGION = "us-west-2"
CLUSTER_NAME = "test-cluster"
CREDENTIALS = ("testing", "testing")
# One botocore session for every test's clients: a new session loads each service model
# again (~0.15 s per client), a shared one keeps them. Sessions are not bound to an event
# loop; the clients made from it are, and each test makes its own.
SHARED_SESSION = get_session()


@pytest.fixture(scope="session", autouse=True)
def one_root_ca_bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The shared session's CA bundle: the first root of botocore's default one (certifi's),
    alone. Each client builds its TLS context when it first connects, loading its bundle
    whether it uses TLS or not: the ~150 roots cost 13 ms of CPU per client, three to
    five clients a test. The tests' clients speak plain HTTP to loopback and never use it."""
    text = Path(get_cert_path(True)).read_text(encoding="utf-8")
    end = "-----END CERTIFICATE-----"
    first = text[text.index("-----BEGIN CERTIFICATE-----") : text.index(end) + len(end)]
    bundle = tmp_path_factory.mktemp("ca") / "one-root.pem"
    bundle.write_text(first + "\n", encoding="utf-8")
    SHARED_SESSION.set_config_variable("ca_bundle", str(bundle))
    yield bundle
    SHARED_SESSION.set_config_variable("ca_bundle", None)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    server = MotoServer().start()
    yield server
    server.stop()


@pytest.fixture
async def aws_clients(moto_server: MotoServer) -> AsyncIterator[AWSClients]:
    clients = AWSClients(
        REGION,
        endpoint_url=moto_server.url,
        endpoints={"pricing": moto_server.pricing_url},
        credentials=CREDENTIALS,
        session=SHARED_SESSION,
    )
    yield clients
    await clients.aclose()


@pytest.fixture
def ec2_faults(moto_server: MotoServer) -> Iterator[EC2Faults]:
    moto_server.faults.clear()
    yield moto_server.faults
    moto_server.faults.clear()


@pytest.fixture
async def aws_account(moto_server: MotoServer, aws_clients: AWSClients) -> Account:
    moto_server.reset()
    moto_server.faults.clear()
    return await seed_account(aws_clients, CLUSTER_NAME)


@pytest.fixture(scope="session")
def moto_catalog(moto_server: MotoServer, shared_moto_catalogue: Path) -> Catalog:
    """The full catalogue, fetched from moto once per run, through `fetch_catalog` (module
    docstring). Workers that start together may each fetch it; each file is written
    whole and renamed into place, so a reader never sees half of one."""
    kept = shared_moto_catalogue / f"catalog-{REGION}.pickle"
    try:
        shared: Catalog = pickle.loads(kept.read_bytes())  # written by this run, below
    except FileNotFoundError:
        pass
    else:
        return shared

    async def fetch() -> Catalog:
        clients = AWSClients(REGION, endpoint_url=moto_server.url, credentials=CREDENTIALS,
                             session=SHARED_SESSION)  # fmt: skip
        try:
            return await fetch_catalog(await clients.ec2())
        finally:
            await clients.aclose()

    catalog = asyncio.run(fetch())
    kept.parent.mkdir(parents=True, exist_ok=True)
    partial = kept.with_name(f"{kept.name}.{os.getpid()}")
    partial.write_bytes(pickle.dumps(catalog, protocol=pickle.HIGHEST_PROTOCOL))
    partial.replace(kept)
    return catalog
