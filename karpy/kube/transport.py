"""Configuration and the raw HTTP transport every karpy request goes through.

kubernetes-asyncio is used for what it does well and nothing else: reading a kubeconfig
or the in-cluster service account, building the TLS context, and owning an aiohttp
session with a bounded connection pool. Requests are sent on that session directly and
answered as raw `aiohttp.ClientResponse` objects, so list and watch bodies are decoded
once, with orjson, and the generated OpenAPI model classes (slow and large at tens of
thousands of pods) are never built.

Credentials are karpy's (`karpy.kube.credentials`): an exec plugin's token is renewed
before it expires, token files are re-read, and a 401 renews the token and retries the
request once. An exec plugin that is missing or fails at start-up is one line (exit 2),
not a traceback. The CA bundle is re-read when its file changes (`karpy.kube.tls`).

The session does not read the environment on each request (aiohttp's ``trust_env``
reads ``~/.netrc`` and the proxy variables per request, on a thread): the proxy the
environment names for the API server (``HTTPS_PROXY``/``HTTP_PROXY``, unless
``NO_PROXY`` or a loopback address exempts it, as client-go decides) is resolved once,
when the transport is made.

Each `Transport` has its own session and connection pool. The controller makes two: one
for the rate-limited write client and informers, one for leader election, so a burst of
writes can neither starve nor queue behind lease renewals.
"""

from __future__ import annotations

import ipaddress
import os
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlencode, urlsplit

import aiohttp
import yaml
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.configuration import Configuration
from kubernetes_asyncio.config import ConfigException, incluster_config, kube_config

from karpy.base.clock import SYSTEM_CLOCK
from karpy.errors import UsageError
from karpy.kube.credentials import (
    EXEC_TIMEOUT,
    CredentialError,
    Credentials,
    ExecCredentials,
    ExecSpec,
    ProviderCredentials,
    TokenFileCredentials,
)
from karpy.kube.errors import TransportError
from karpy.kube.tls import TLSContext
from karpy.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.base.clock import Clock

__all__ = ["SERVICE_ACCOUNT_DIR", "Transport", "load_configuration"]

log = get_logger("kube.transport")

USER_AGENT = "karpy"
DEFAULT_TIMEOUT = aiohttp.ClientTimeout(total=60, sock_connect=10)
SERVICE_ACCOUNT_DIR: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")


async def load_configuration(
    kubeconfig: str | None,
    env: Mapping[str, str] | None = None,
    *,
    clock: Clock = SYSTEM_CLOCK,
    service_account: Path = SERVICE_ACCOUNT_DIR,
    exec_timeout: float = EXEC_TIMEOUT,
) -> Any:
    """A kubernetes-asyncio `Configuration`: from ``kubeconfig`` when given, else the
    in-cluster service account (in ``service_account``) when running in a pod, else
    ``$KUBECONFIG`` or ``~/.kube/config``; its ``refresh_api_key_hook`` is karpy's
    `Credentials` when the token can change. Raises `UsageError` (one line) when none of
    them works, or when the kubeconfig's exec plugin cannot give a token."""
    env = os.environ if env is None else env
    configuration = Configuration()
    try:
        if kubeconfig is None and env.get("KUBERNETES_SERVICE_HOST"):
            token_file = service_account / "token"
            incluster_config.InClusterConfigLoader(
                token_filename=str(token_file), cert_filename=str(service_account / "ca.crt"),
                environ=dict(env),
            ).load_and_set(configuration)  # fmt: skip
            configuration.refresh_api_key_hook = TokenFileCredentials(token_file, clock=clock)
            return configuration
        path = kubeconfig or env.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
        if not Path(path).exists():  # noqa: ASYNC240 - one stat, once, at start-up
            raise UsageError(
                f"no Kubernetes API configured: kubeconfig {path!r} does not exist and "
                "KUBERNETES_SERVICE_HOST is not set (not running in a pod)"
            )
        _check_kubeconfig(path)
        merged = kube_config.KubeConfigMerger(path)
        user = _current_user(merged.config)
        exec_credentials = await _start_exec(
            user, path, clock, exec_timeout, _cluster_info(merged.config)
        )
        if exec_credentials is not None:
            del user.value["exec"]  # karpy runs the plugin from now on, not the library
        loader = kube_config.KubeConfigLoader(config_dict=merged.config, config_base_path=None)
        await loader.load_and_set(configuration)
    except ConfigException as exc:
        raise UsageError(f"no Kubernetes API configured: {exc}") from None
    credentials: Credentials | None = exec_credentials
    if credentials is not None:
        configuration.api_key["BearerToken"] = f"Bearer {await credentials.token()}"
    elif getattr(loader, "provider", None) in ("gcp", "oidc"):
        credentials = ProviderCredentials(loader, clock=clock)
    elif user is not None and user.safe_get("tokenFile") and not user.safe_get("token"):
        token_file = Path(path).parent / str(user["tokenFile"])
        credentials = TokenFileCredentials(token_file, clock=clock)
    if credentials is not None:
        configuration.refresh_api_key_hook = credentials
    return configuration


def _current_user(config: Any) -> Any:
    """The current context's user entry (a library `ConfigNode`), or None."""
    return _current_entry(config, "user")


def _current_entry(config: Any, kind: str) -> Any:
    context = config.safe_get("current-context")
    if not context or not config.safe_get("contexts") or not config.safe_get(kind + "s"):
        return None
    found = config["contexts"].get_with_name(context, safe=True)
    if not found or not found["context"].safe_get(kind):
        return None
    entry = config[kind + "s"].get_with_name(found["context"][kind], safe=True)
    return entry[kind] if entry and entry.safe_get(kind) else None


def _cluster_info(config: Any) -> dict[str, Any]:
    """The ExecCredential's ``spec.cluster`` (for ``provideClusterInfo``): the current
    cluster's entry, as client-go hands it over (a CA file is not inlined)."""
    cluster = _current_entry(config, "cluster")
    keys = ("server", "tls-server-name", "insecure-skip-tls-verify",
            "certificate-authority-data", "proxy-url", "disable-compression")  # fmt: skip
    return {k: cluster.value[k] for k in keys if cluster is not None and k in cluster.value}


async def _start_exec(
    user: Any, path: str, clock: Clock, time_limit: float, cluster: dict[str, Any]
) -> ExecCredentials | None:
    """The user's exec plugin, run once; None when there is none, or when it answers a
    client certificate (left to the library, which reads it once). A plugin that cannot
    give a token is a `UsageError`."""
    if user is None or user.safe_get("exec") is None or user.safe_get("auth-provider"):
        return None
    try:
        spec = ExecSpec.parse(user["exec"].value, base_dir=Path(path).parent, cluster=cluster)
        credentials = ExecCredentials(spec, clock=clock, timeout=time_limit)
        first = await credentials.start()
    except CredentialError as exc:
        raise UsageError(f"no Kubernetes API configured: kubeconfig {path!r}: {exc}") from None
    if first.client_certificate:
        log.warning("exec plugin answers a client certificate: it is read once, not renewed",
                    plugin=spec.name)  # fmt: skip
        return None
    return credentials


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
    responses. Create it inside the event loop; `close` it when done. A 401 to a request
    made with renewable credentials renews them and sends the request once more."""

    def __init__(
        self, configuration: Any, *, pool_size: int = 100, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        configuration.connection_pool_maxsize = pool_size
        self.configuration = configuration
        self._api_client = ApiClient(configuration)
        self.host = str(configuration.host).rstrip("/")
        self._session = _quiet_session(self._api_client.rest_client)
        self.proxy = env_proxy(self.host)
        self._server_hostname = configuration.tls_server_name
        hook = configuration.refresh_api_key_hook
        self.credentials: Credentials | None = hook if isinstance(hook, Credentials) else None
        self.tls = TLSContext(configuration, clock=clock) if self.host.startswith("https") else None

    async def close(self) -> None:
        await self._api_client.close()

    async def _headers(self, content_type: str | None, accept: str) -> dict[str, str]:
        headers = {"Accept": accept, "User-Agent": USER_AGENT}
        if content_type:
            headers["Content-Type"] = content_type
        if self.credentials is not None:
            headers["authorization"] = self.credentials.header(await self.credentials.token())
            return headers
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
        `TransportError` when no HTTP response arrives (`CredentialError` when there is
        no token to send)."""
        url = self.host + path
        if query:
            url += "?" + urlencode(query)
        content_type = content_type if body is not None else None
        headers = await self._headers(content_type, accept)
        response = await self._send(method, url, path, body=body, headers=headers, limits=limits)
        if response.status != 401 or self.credentials is None:
            return response
        try:
            await self.credentials.rejected(headers.get("authorization"))
            headers = await self._headers(content_type, accept)
        except CredentialError as exc:
            log.warning("could not renew refused credentials", method=method, path=path,
                        error=str(exc))  # fmt: skip
            return response  # the caller sees the 401
        response.release()
        return await self._send(method, url, path, body=body, headers=headers, limits=limits)

    async def _send(
        self,
        method: str,
        url: str,
        path: str,
        *,
        body: bytes | None,
        headers: dict[str, str],
        limits: aiohttp.ClientTimeout | None,
    ) -> aiohttp.ClientResponse:
        extra: dict[str, Any] = {}
        if self._server_hostname:
            extra["server_hostname"] = self._server_hostname
        if self.tls is not None:
            extra["ssl"] = self.tls.current()
        if self.proxy is not None:
            extra["proxy"] = self.proxy
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


def _quiet_session(rest_client: Any) -> aiohttp.ClientSession:
    """The client library's session (its TLS-configured, bounded connection pool), made
    again without ``trust_env`` (see the module docstring); the library closes it."""
    old: aiohttp.ClientSession = rest_client.pool_manager
    connector = old.connector
    old.detach()  # the connector now belongs to the new session
    session = aiohttp.ClientSession(connector=connector, trust_env=False, read_bufsize=2**21)
    rest_client.pool_manager = session
    return session


def env_proxy(host: str) -> str | None:
    """The proxy the environment names for requests to ``host`` (a URL), or None: what
    client-go's ``ProxyFromEnvironment`` picks (``NO_PROXY`` and loopback exempt)."""
    hostname = urlsplit(host).hostname or ""
    if not hostname or hostname == "localhost" or _is_loopback(hostname):
        return None
    if urllib.request.proxy_bypass(hostname):
        return None
    return urllib.request.getproxies_environment().get(urlsplit(host).scheme) or None


def _is_loopback(hostname: str) -> bool:
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False
