"""`MotoServer`: moto serving EC2, SSM, IAM, SQS and EKS on loopback, made EC2-faithful.

One object holds everything the AWS side of the sandbox (and the AWS tests) talk to:

- moto's WSGI application in a thread (as moto's ``ThreadedMotoServer`` runs it), on
  127.0.0.1 and a free port unless told otherwise, so backend seeding and patches made in
  this process are what clients see over HTTP;
- around it, a WSGI wrapper that answers throttled actions: while the `EC2Faults` hold a
  throttle budget for an action, its calls get EC2's ``RequestLimitExceeded`` (HTTP 503,
  EC2's XML error body; ``ThrottlingException`` for JSON-protocol services) without
  reaching moto, so a client's standard-mode retries are exercised for real (requests
  with an ``x-karpy-sandbox-component`` header, the sandbox's own, are exempt); it also
  serves ``GET``/``POST /sandbox/v1/aws/faults`` (`EC2Faults.apply`'s JSON) for tests
  that run the sandbox in another process; it remembers its answers to the two
  catalogue calls (`CatalogCache`; in a directory too when ``KARPY_SANDBOX_CATALOG_CACHE``
  names one, so the sandboxes started with it render them once between them); and it
  lets one EC2 write run at a time: moto checks
  then creates without a lock, so two concurrent CreateLaunchTemplate calls with one name
  both succeeded under load, where EC2 refuses the second (reads still run side by side);
- the CreateFleet and spot-price patches (`karpy.sandbox.aws.fleet`, `.spotprices`)
  installed with the same injector and `PriceTable`;
- the Pricing API stub (`karpy.sandbox.aws.pricing`) beside it, at `pricing_url`.

moto preloads ~1,300 stock Amazon images into every EC2 backend it creates, which costs
about 0.3 s per region after each reset and is nothing an EKS account's Karpenter looks
at; unless ``stock_amis=True`` the server turns that off (moto's
``MOTO_EC2_LOAD_DEFAULT_AMIS=false``, read from this process's environment), so the
account holds only the images `seed_account` registers. moto's EKS also rebuilds
botocore's partition table (~0.25 s) to check each role ARN; the server checks against
one table built once.

`reset` empties every moto backend (``POST /moto-api/reset``); faults are cleared with
``faults.clear()``. moto's state is per process: run one `MotoServer` per process. A
second one started inside the first's life shares its backends; its faults and prices are
in force until it stops, then the first's are again.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
import threading
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

import moto.eks.models
from botocore.session import get_session as botocore_session
from moto import __version__ as moto_version
from moto.eks.exceptions import InvalidParameterException
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import BaseWSGIServer, make_server

from karpy.sandbox.aws import CATALOG_CACHE_ENV, fleet, reservations, spotprices
from karpy.sandbox.aws.faults import EC2Faults
from karpy.sandbox.aws.prices import PriceTable, default_prices
from karpy.sandbox.aws.pricing import PricingStub

__all__ = ["CatalogCache", "MotoServer", "ThrottlingApp"]

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

FAULTS_PATH: Final = "/sandbox/v1/aws/faults"
# Requests of the sandbox's own machinery (the EC2 kubelet stand-in) carry this header
# and are never throttled.
EXEMPT_ENVIRON: Final = "HTTP_X_KARPY_SANDBOX_COMPONENT"
THROTTLE_XML: Final = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
    "<Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message>"
    "</Error></Errors><RequestID>{request_id}</RequestID></Response>"
)


# EC2's instance-type catalogue is moto's fixed data: the same request always gets the
# same answer, and rendering ~1,300 types as XML costs moto ~1.3 s of CPU per call.
CATALOG_ACTIONS: Final = frozenset({"DescribeInstanceTypes", "DescribeInstanceTypeOfferings"})
# Query-protocol actions that change nothing; every other action is a write.
READ_PREFIXES: Final = ("Describe", "Get", "List")
CREDENTIAL_SCOPE: Final = re.compile(r"Credential=[^/]+/[0-9]{8}/(?P<region>[^/]+)/")


class CatalogCache:
    """moto's answers to the catalogue calls, kept per region and request body.

    Every controller start, ``karpy instance-types`` run and kubelet stand-in asks EC2 for
    the whole catalogue; moto renders it afresh each time. The answer depends only on the
    region (from the request's SigV4 credential scope) and the request's parameters, so a
    successful answer is replayed byte for byte, request id included (a client does not
    compare request ids across calls). Failures are never kept.

    With a ``directory``, answers are also kept there, one file per moto version, region
    and request, so every process given the same directory (the test suite starts a
    dozen AWS sandboxes and one moto server per worker) has moto render each answer once
    between them instead of once each (~1.6 s of CPU). A file is written whole under a
    temporary name and then renamed, so a reader sees all of it or none; one that cannot
    be read or written is only a miss.
    """

    def __init__(self, directory: Path | None = None) -> None:
        self._answers: dict[tuple[str, bytes], tuple[str, list[tuple[str, str]], bytes]] = {}
        self._lock = threading.Lock()
        self.directory = directory

    def serve(self, app: WSGIApp, environ: dict[str, Any],
              start_response: StartResponse) -> Iterable[bytes]:  # fmt: skip
        """Answer from memory, the directory, or ``app`` (remembered when it succeeds)."""
        scope = CREDENTIAL_SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
        body = environ["wsgi.input"].getvalue()
        key = (scope.group("region") if scope else "", body)
        with self._lock:
            known = self._answers.get(key)
        if known is None:
            known = self._load(key)
            if known is not None:
                with self._lock:
                    self._answers[key] = known
        if known is None:
            seen: list[tuple[str, list[tuple[str, str]]]] = []

            def capture(status: str, headers: list[tuple[str, str]], *exc: Any) -> Any:
                seen.append((status, list(headers)))
                return start_response(status, headers, *exc)

            chunks = app(environ, capture)
            try:
                data = b"".join(chunks)
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()
            if seen and seen[0][0].startswith("200"):
                answer = (seen[0][0], seen[0][1], data)
                with self._lock:
                    self._answers[key] = answer
                self._store(key, answer)
            return [data]
        status, headers, data = known
        start_response(status, headers)
        return [data]

    def clear(self) -> None:
        with self._lock:
            self._answers.clear()

    def _path(self, key: tuple[str, bytes]) -> Path | None:
        if self.directory is None:
            return None
        digest = hashlib.sha256(f"{moto_version}\0{key[0]}\0".encode() + key[1]).hexdigest()
        return self.directory / f"{digest}.json"

    def _load(self, key: tuple[str, bytes]) -> tuple[str, list[tuple[str, str]], bytes] | None:
        path = self._path(key)
        if path is None:
            return None
        try:
            stored = json.loads(path.read_bytes())
            return (str(stored["status"]), [(str(k), str(v)) for k, v in stored["headers"]],
                    stored["body"].encode("utf-8"))  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _store(self, key: tuple[str, bytes], answer: tuple[str, list[tuple[str, str]], bytes]
               ) -> None:  # fmt: skip
        path = self._path(key)
        if path is None:
            return
        status, headers, data = answer
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return
        document = json.dumps({"status": status, "headers": headers, "body": text})
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            partial.write_text(document, encoding="utf-8")
            os.replace(partial, path)
        except OSError:
            return


def catalog_cache_directory() -> Path | None:
    """The directory ``KARPY_SANDBOX_CATALOG_CACHE`` names, if any (`CatalogCache`)."""
    value = os.environ.get(CATALOG_CACHE_ENV, "")
    return Path(value) if value else None


class ThrottlingApp:
    """WSGI wrapper answering throttled actions before moto sees them (module docstring)."""

    def __init__(self, app: WSGIApp, faults: EC2Faults, catalog: CatalogCache | None = None
                 ) -> None:  # fmt: skip
        self.app = app
        self.faults = faults
        self.catalog = catalog or CatalogCache()
        self._writes = threading.Lock()  # one EC2 write at a time (module docstring)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == FAULTS_PATH:
            return self._faults(environ, start_response)
        if environ.get(EXEMPT_ENVIRON):
            return self.app(environ, start_response)
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if target:
            action = target.rsplit(".", 1)[-1]
            if self.faults.take_throttle(action):
                body = json.dumps({"__type": "ThrottlingException", "message": "Rate exceeded"})
                return _answer(start_response, 400, "application/x-amz-json-1.1", body)
        elif environ.get("REQUEST_METHOD") == "POST":
            action = _query_action(environ)
            if action and self.faults.take_throttle(action):
                body = THROTTLE_XML.format(request_id=uuid.uuid4())
                return _answer(start_response, 503, "text/xml;charset=UTF-8", body)
            if action in CATALOG_ACTIONS:
                return self.catalog.serve(self.app, environ, start_response)
            if action and not action.startswith(READ_PREFIXES):
                with self._writes:  # the whole answer is made inside the lock
                    return list(self.app(environ, start_response))
        return self.app(environ, start_response)

    def _faults(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        """``GET``/``POST {FAULTS_PATH}``: read or change the faults (`EC2Faults.apply`)."""
        if environ.get("REQUEST_METHOD") == "POST":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            raw = environ["wsgi.input"].read(length) if length else b"{}"
            try:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("the body must be a JSON object")
                self.faults.apply(body)
            except ValueError as error:
                return _answer(start_response, 400, "application/json",
                               json.dumps({"error": str(error)}))  # fmt: skip
        return _answer(start_response, 200, "application/json",
                       json.dumps(self.faults.describe()))  # fmt: skip


def _query_action(environ: dict[str, Any]) -> str | None:
    """The ``Action`` of a query-protocol request (EC2, IAM), leaving the body readable."""
    if not str(environ.get("CONTENT_TYPE", "")).startswith("application/x-www-form-urlencoded"):
        return None
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None
    body = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)
    values = urllib.parse.parse_qs(body.decode("utf-8", "replace")).get("Action")
    return values[0] if values else None


def _answer(start_response: StartResponse, status: int, content_type: str,
            body: str) -> list[bytes]:  # fmt: skip
    data = body.encode()
    reason = {200: "OK", 400: "Bad Request", 503: "Service Unavailable"}[status]
    start_response(
        f"{status} {reason}",
        [("Content-Type", content_type), ("Content-Length", str(len(data)))],
    )
    return [data]


ROLE_ARN: Final = re.compile(r"arn:(?P<partition>.+):iam::(?P<account_id>[0-9]{12}):role/.+")


@functools.cache
def _partitions() -> frozenset[str]:
    return frozenset(botocore_session().get_available_partitions())


def _validate_role_arn(arn: str) -> None:
    """moto's EKS role ARN check, with the partition list built once."""
    match = ROLE_ARN.match(arn or "")
    if match is None or match.group("partition") not in _partitions():
        raise InvalidParameterException(message=f"Invalid Role Arn: '{arn}'")


class _QuietHandler(MotoRequestHandler):
    """moto's request handler without a stderr line per request."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        return


_RUNNING: list[MotoServer] = []  # started, not stopped; the last one's patches are in force


class MotoServer:
    """moto + throttling + CreateFleet fidelity + spot prices + Pricing stub (module docstring)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        faults: EC2Faults | None = None,
        prices: PriceTable | None = None,
        pricing_port: int = 0,
        stock_amis: bool = False,
    ) -> None:
        self.faults = faults or EC2Faults()
        self.prices = prices or default_prices()
        self._host, self._port = host, port
        self.stock_amis = stock_amis
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        self.pricing = PricingStub(self.prices, host, pricing_port)

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("MotoServer.start() first")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def pricing_url(self) -> str:
        return self.pricing.url

    def start(self) -> MotoServer:
        os.environ["MOTO_EC2_LOAD_DEFAULT_AMIS"] = "true" if self.stock_amis else "false"
        moto.eks.models.validate_role_arn = _validate_role_arn  # type: ignore[attr-defined]
        _RUNNING.append(self)
        self._install()
        reservations.install()
        app = ThrottlingApp(DomainDispatcherApplication(create_backend_app), self.faults,
                            CatalogCache(catalog_cache_directory()))  # fmt: skip
        self._server = make_server(
            self._host, self._port, app, threaded=True, request_handler=_QuietHandler
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="moto-server", daemon=True
        )
        self._thread.start()
        self.pricing.start()
        return self

    def _install(self) -> None:
        fleet.install(self.faults, self.prices)
        spotprices.install(self.prices)

    def stop(self) -> None:
        # The patches are process-wide: a server started and stopped inside another's
        # life (a test, a tool) hands them back, or the outer one would go on answering
        # with the inner one's faults and prices.
        if self in _RUNNING:
            _RUNNING.remove(self)
            if _RUNNING:
                _RUNNING[-1]._install()
        self.pricing.stop()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = self._thread = None

    def reset(self) -> None:
        """Empty every moto backend (``POST /moto-api/reset``)."""
        request = urllib.request.Request(f"{self.url}/moto-api/reset", method="POST", data=b"")
        with urllib.request.urlopen(request, timeout=30) as answer:  # loopback only
            answer.read()

    def __enter__(self) -> MotoServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
