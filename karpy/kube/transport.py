"""Configuration and the raw HTTP transport every karpy request goes through.

kubernetes-asyncio is used for what it does well and nothing else: reading a kubeconfig
or the in-cluster service account (with token refresh and exec plugins), building the TLS
context, and owning an aiohttp session with a bounded connection pool. Requests are sent
on that session directly and answered as raw `aiohttp.ClientResponse` objects, so list
and watch bodies are decoded once, with orjson, and the generated OpenAPI model classes
(slow and large at tens of thousands of pods) are never built.

Each `Transport` has its own session and connection pool. The controller makes two: one
for the rate-limited write client and informers, one for leader election, so a burst of
writes can neither starve nor queue behind lease renewals.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import aiohttp
import yaml
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.configuration import Configuration
from kubernetes_asyncio.config import ConfigException, incluster_config, kube_config

from karpy.errors import UsageError
from karpy.kube.errors import TransportError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["Transport", "load_configuration"]

USER_AGENT = "karpy"
DEFAULT_TIMEOUT = aiohttp.ClientTimeout(total=60, sock_connect=10)


async def load_configuration(kubeconfig: str | None, env: Mapping[str, str] | None = None) -> Any:
    """A kubernetes-asyncio `Configuration`: from ``kubeconfig`` when given, else the
    in-cluster service account when running in a pod, else ``$KUBECONFIG`` or
    ``~/.kube/config``. Raises `UsageError` (one line) when none of them works."""
    env = os.environ if env is None else env
    configuration = Configuration()
    try:
        if kubeconfig is None and env.get("KUBERNETES_SERVICE_HOST"):
            incluster_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            return configuration
        path = kubeconfig or env.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
        if not Path(path).exists():  # noqa: ASYNC240 - one stat, once, at start-up
            raise UsageError(
                f"no Kubernetes API configured: kubeconfig {path!r} does not exist and "
                "KUBERNETES_SERVICE_HOST is not set (not running in a pod)"
            )
        _check_kubeconfig(path)
        await kube_config.load_kube_config(
            config_file=path, client_configuration=configuration, persist_config=False
        )
    except ConfigException as exc:
        raise UsageError(f"no Kubernetes API configured: {exc}") from None
    return configuration


def _check_kubeconfig(path: str) -> None:
    """A kubeconfig the client library would choke on (a directory, a binary or empty
    file, YAML that is not a mapping) is one line naming it, not a traceback."""
    where = f"no Kubernetes API configured: kubeconfig {path!r}"
    file = Path(path)
    if file.is_dir():
        raise UsageError(f"{where} is a directory, not a file")
    try:
        doc = yaml.safe_load(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{where} is not UTF-8 text (a binary file?)") from None
    except yaml.YAMLError:
        raise UsageError(f"{where} is not valid YAML") from None
    except OSError as exc:
        raise UsageError(f"{where}: {exc.strerror or exc}") from None
    if not isinstance(doc, dict) or not doc:
        raise UsageError(f"{where} is empty or not a kubeconfig mapping")


class Transport:
    """Sends requests to the API server named by ``configuration`` and returns raw
    responses. Create it inside the event loop; `close` it when done."""

    def __init__(self, configuration: Any, *, pool_size: int = 100) -> None:
        configuration.connection_pool_maxsize = pool_size
        self.configuration = configuration
        self._api_client = ApiClient(configuration)
        self._session: aiohttp.ClientSession = self._api_client.rest_client.pool_manager
        self.host = str(configuration.host).rstrip("/")
        self._server_hostname = configuration.tls_server_name

    async def close(self) -> None:
        await self._api_client.close()

    async def _headers(self, content_type: str | None, accept: str) -> dict[str, str]:
        headers = {"Accept": accept, "User-Agent": USER_AGENT}
        if content_type:
            headers["Content-Type"] = content_type
        for setting in (await self.configuration.auth_settings()).values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        if self.configuration.username or self.configuration.password:
            auth = aiohttp.BasicAuth(self.configuration.username, self.configuration.password)
            headers["Authorization"] = auth.encode()
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
        accept: str = "application/json",
        limits: aiohttp.ClientTimeout | None = None,
    ) -> aiohttp.ClientResponse:
        """Send one request; the caller reads and releases the response. Raises
        `TransportError` when no HTTP response arrives."""
        url = self.host + path
        if query:
            url += "?" + urlencode(query)
        headers = await self._headers(content_type if body is not None else None, accept)
        extra: dict[str, Any] = {}
        if self._server_hostname:
            extra["server_hostname"] = self._server_hostname
        try:
            return await self._session.request(
                method,
                url,
                data=body,
                headers=headers,
                timeout=limits or DEFAULT_TIMEOUT,
                **extra,
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise TransportError(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
