"""A CA bundle rotated on disk is used for new connections without a restart; one that
does not load keeps the previous context."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes_asyncio.client.configuration import Configuration

from karpy.kube.client import KubeClient
from karpy.kube.errors import TransportError
from karpy.kube.resources import PODS
from karpy.kube.tls import CHECK_PERIOD
from karpy.kube.transport import Transport
from tests.kube.fakeclock import FakeClock

NOW = datetime.datetime.now(datetime.UTC)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _certificate(subject: str, key: Any, issuer: str, signer: Any, *, ca: bool) -> x509.Certificate:
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - datetime.timedelta(hours=1))
        .not_valid_after(NOW + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                          content_commitment=False, key_encipherment=False,
                          data_encipherment=False, key_agreement=False, encipher_only=False,
                          decipher_only=False),
            critical=True,
        )  # fmt: skip
        builder = builder.add_extension(
            x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
        )
    else:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return builder.sign(signer, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


class Authority:
    def __init__(self, name: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.cert = _certificate(name, self.key, name, self.key, ca=True)
        self.name = name

    def issue(self, directory: Path) -> tuple[Path, Path]:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _certificate("127.0.0.1", key, self.name, self.key, ca=False)
        cert_file, key_file = directory / "server.pem", directory / "server.key"
        cert_file.write_bytes(_pem(cert))
        key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                               serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))  # fmt: skip
        return cert_file, key_file


@pytest.fixture
async def https_server(tmp_path: Path) -> AsyncIterator[tuple[str, Authority]]:
    """A server answering an empty pod list over TLS, with a certificate of its own CA."""
    authority = Authority("cluster-ca-2")
    cert_file, key_file = authority.issue(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)

    async def pods(request: web.Request) -> web.Response:
        return web.json_response({"kind": "PodList", "items": [], "metadata": {}})

    app = web.Application()
    app.router.add_get("/api/v1/pods", pods)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"https://127.0.0.1:{port}", authority
    finally:
        await runner.cleanup()


async def test_a_rotated_ca_bundle_is_used_for_new_connections(https_server, tmp_path):
    url, authority = https_server
    bundle = tmp_path / "ca.crt"
    bundle.write_bytes(_pem(Authority("cluster-ca-1").cert))  # the CA before rotation
    configuration = Configuration()
    configuration.host = url
    configuration.ssl_ca_cert = str(bundle)
    clock = FakeClock()
    transport = Transport(configuration, clock=clock)
    client = KubeClient(transport, max_attempts=1)
    try:
        with pytest.raises(TransportError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.list(PODS)
        bundle.write_bytes(_pem(authority.cert))  # the bundle is rotated on disk
        await clock.advance(CHECK_PERIOD)
        assert await client.list(PODS) == ([], "")
        bundle.write_text("half-written")  # a bundle that does not load is ignored
        await clock.advance(CHECK_PERIOD)
        assert await client.list(PODS) == ([], "")
    finally:
        await transport.close()
    assert transport.tls is not None
    assert transport.tls.builds == 3  # the first, the rotated one, the failed attempt
