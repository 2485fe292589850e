"""Credentials that outlive their tokens: exec plugins, token files, auth providers.

kubernetes-asyncio reads a kubeconfig once. An ``exec`` plugin (``aws eks get-token``,
``gke-gcloud-auth-plugin``, ...) is run at start-up and its token kept forever, although
an EKS token expires after 15 minutes: from then on every request is refused, the lease
is lost and the process exits (or, without leader election, runs on stale state). Its
in-cluster loader re-reads the kubelet-rotated service-account token every minute, but
not after a 401, and a kubeconfig's ``tokenFile`` is read once. So karpy keeps the
library for parsing and TLS, and owns the token:

* A `Credentials` object is installed as the `Configuration`'s ``refresh_api_key_hook``,
  which the library awaits before every request to set the ``Authorization`` header (the
  transport reads that header through ``auth_settings``). Copies of the configuration
  share it, so the leader-election transport and the main one refresh once, together.
* On a 401 the transport calls `Credentials.rejected` with the header that was refused,
  then retries that request once. A refusal of a token that was already replaced (by a
  request that failed earlier) costs no second refresh.

`ExecCredentials` runs the plugin as an asyncio subprocess (never blocking the loop) with
a timeout, one run at a time (an `asyncio.Lock`; requests that wait for it use its
result), again when less than a minute or a tenth of the token's lifetime remains,
whichever is shorter, and when the API server refuses the token. A failed run is logged
with the plugin's stderr (its last KiB, on one line) and never its stdout, which holds
the token; the old token is used while it is valid, and the plugin is not run again for
`RETRY_AFTER_FAILURE` seconds. `TokenFileCredentials` re-reads a token file every
minute and after a 401. `ProviderCredentials` re-evaluates a kubeconfig
``auth-provider`` (gcp, oidc) through the library's loader, which refreshes a token
close to its expiry, every minute and after a 401.

Wall-clock expiry (``status.expirationTimestamp``) is read from the injected `Clock`'s
``now``, the pacing from its ``monotonic``: tests move time instead of waiting for it.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs
import orjson

from karpy.base.clock import SYSTEM_CLOCK
from karpy.kube.errors import TransportError
from karpy.log import get_logger, redact_text

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.base.clock import Clock

__all__ = [
    "CredentialError",
    "Credentials",
    "ExecCredentials",
    "ExecSpec",
    "IssuedToken",
    "ProviderCredentials",
    "TokenFileCredentials",
    "run_exec_plugin",
]

log = get_logger("kube.credentials")

EXEC_API_VERSIONS: Final = (
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
)
EXEC_TIMEOUT: Final = 30.0  # seconds a plugin may take
RETRY_AFTER_FAILURE: Final = 10.0  # seconds before a failed plugin is run again
REREAD_PERIOD: Final = 60.0  # seconds between reads of a token file, as client-go
REFRESH_MARGIN: Final = 60.0  # refresh when less than this (or 10 % of the lifetime) remains
STDERR_LIMIT: Final = 1024  # bytes of a failed plugin's stderr that are logged


class CredentialError(TransportError):
    """No usable credentials: the exec plugin is missing, failed, timed out or printed
    something other than an ExecCredential, or a token file cannot be read. A
    `TransportError`, so callers treat it as a request that got no answer."""


class Credentials(abc.ABC):
    """What to send as ``Authorization``: a bearer token, kept fresh (see the module
    docstring). Subclasses implement `token` and `rejected`."""

    @abc.abstractmethod
    async def token(self) -> str:
        """A bearer token that is valid now, renewed first when it is about to expire."""

    @abc.abstractmethod
    async def rejected(self, authorization: str | None) -> None:
        """The API server answered 401 to a request that carried ``authorization``."""

    async def __call__(self, configuration: Any) -> None:
        # The library's refresh_api_key_hook: awaited by `Configuration.auth_settings`.
        configuration.api_key["BearerToken"] = f"Bearer {await self.token()}"

    @staticmethod
    def header(token: str) -> str:
        return f"Bearer {token}"


# --- exec plugins -------------------------------------------------------------------------


@attrs.frozen(slots=True)
class ExecSpec:
    """A kubeconfig user's ``exec`` entry (client.authentication.k8s.io)."""

    command: str
    api_version: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    interactive_mode: str = "IfAvailable"
    cluster: Mapping[str, Any] | None = None  # spec.cluster, when provideClusterInfo

    @classmethod
    def parse(
        cls, entry: Any, *, base_dir: Path, cluster: Mapping[str, Any] | None = None
    ) -> ExecSpec:
        """The entry of a kubeconfig; raises `CredentialError` naming what is wrong. A
        command with a path separator is relative to the kubeconfig's directory, as
        client-go resolves it; a bare name is looked up on ``PATH``."""
        if not isinstance(entry, dict):
            raise CredentialError("the exec entry is not a mapping")
        command, api_version = entry.get("command"), entry.get("apiVersion")
        if not isinstance(command, str) or not command:
            raise CredentialError("the exec entry has no command")
        if api_version not in EXEC_API_VERSIONS:
            raise CredentialError(
                f"exec plugin {command!r}: apiVersion {api_version!r} is not one of "
                + ", ".join(EXEC_API_VERSIONS)
            )
        if os.sep in command and not Path(command).is_absolute():
            command = str(base_dir / command)
        args = entry.get("args") or []
        env = entry.get("env") or []
        if not isinstance(args, list) or not isinstance(env, list):
            raise CredentialError(f"exec plugin {command!r}: args and env must be lists")
        try:
            pairs = tuple((str(item["name"]), str(item["value"])) for item in env)
        except (KeyError, TypeError):
            raise CredentialError(
                f"exec plugin {command!r}: env entries need a name and a value"
            ) from None
        mode = str(entry.get("interactiveMode") or "IfAvailable")
        if mode == "Always":
            raise CredentialError(
                f"exec plugin {command!r} has interactiveMode Always, but karpy runs "
                "without a terminal"
            )
        return cls(command, str(api_version), tuple(str(a) for a in args), pairs, mode,
                   cluster if entry.get("provideClusterInfo") else None)  # fmt: skip

    @property
    def name(self) -> str:
        return Path(self.command).name


@attrs.frozen(slots=True)
class IssuedToken:
    """A plugin's answer: the token and, when it said so, when it expires (UTC)."""

    value: str = attrs.field(repr=False)
    expires: datetime | None
    issued: datetime
    client_certificate: bool = False  # the answer carried a client certificate instead

    def refresh_at(self) -> datetime | None:
        if self.expires is None:
            return None
        margin = min(REFRESH_MARGIN, (self.expires - self.issued).total_seconds() / 10)
        return self.expires - timedelta(seconds=max(margin, 0.0))


async def run_exec_plugin(
    spec: ExecSpec, *, now: datetime, time_limit: float = EXEC_TIMEOUT
) -> IssuedToken:
    """Run the plugin once; its ExecCredential. Raises `CredentialError` with one line
    that never quotes the plugin's stdout."""
    info: dict[str, Any] = {
        "apiVersion": spec.api_version,
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }
    if spec.cluster is not None:
        info["spec"]["cluster"] = dict(spec.cluster)
    env = {**os.environ, **dict(spec.env), "KUBERNETES_EXEC_INFO": orjson.dumps(info).decode()}
    try:
        process = await asyncio.create_subprocess_exec(
            spec.command, *spec.args, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
    except FileNotFoundError:
        where = "" if os.sep in spec.command else " on PATH"
        raise CredentialError(f"exec plugin {spec.command!r} not found{where}") from None
    except OSError as exc:
        raise CredentialError(
            f"exec plugin {spec.command!r} cannot be run: {exc.strerror or exc}"
        ) from None
    try:
        async with asyncio.timeout(time_limit):  # not wait_for: see kube/leaderelection.py
            stdout, stderr = await process.communicate()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise CredentialError(
            f"exec plugin {spec.name!r} did not answer within {time_limit:g}s"
        ) from None
    if process.returncode != 0:
        detail = _one_line(stderr)
        raise CredentialError(
            f"exec plugin {spec.name!r} exited with status {process.returncode}"
            + (f": {detail}" if detail else "")
        )
    return _parse_exec_credential(spec, stdout, now)


def _parse_exec_credential(spec: ExecSpec, stdout: bytes, now: datetime) -> IssuedToken:
    where = f"exec plugin {spec.name!r}"
    try:
        doc = orjson.loads(stdout)
    except orjson.JSONDecodeError:
        raise CredentialError(f"{where} printed no ExecCredential (not JSON)") from None
    if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
        raise CredentialError(f"{where} printed no ExecCredential (no kind ExecCredential)")
    if doc.get("apiVersion") != spec.api_version:
        raise CredentialError(
            f"{where} answered apiVersion {doc.get('apiVersion')!r}, not {spec.api_version!r}"
        )
    status = doc.get("status")
    if not isinstance(status, dict):
        raise CredentialError(f"{where} printed an ExecCredential without a status")
    expires = None
    stamp = status.get("expirationTimestamp")
    if stamp:
        try:
            expires = datetime.fromisoformat(str(stamp))
        except ValueError:
            raise CredentialError(
                f"{where}: expirationTimestamp {stamp!r} is not an RFC 3339 time"
            ) from None
        if expires.tzinfo is None:
            raise CredentialError(f"{where}: expirationTimestamp {stamp!r} has no time zone")
    token = status.get("token")
    if isinstance(token, str) and token:
        return IssuedToken(token, expires, now)
    if status.get("clientCertificateData") and status.get("clientKeyData"):
        return IssuedToken("", expires, now, client_certificate=True)
    raise CredentialError(f"{where} printed an ExecCredential with neither token nor certificate")


def _one_line(stderr: bytes) -> str:
    text = stderr[-STDERR_LIMIT:].decode("utf-8", "replace")
    return redact_text(" ".join(text.split()))


class ExecCredentials(Credentials):
    """Tokens from an exec plugin, renewed before they expire and after a 401."""

    def __init__(
        self, spec: ExecSpec, *, clock: Clock = SYSTEM_CLOCK, timeout: float = EXEC_TIMEOUT
    ) -> None:
        self.spec = spec
        self.clock = clock
        self.timeout = timeout
        self.runs = 0
        self._current: IssuedToken | None = None
        self._lock = asyncio.Lock()
        self._quiet_until = float("-inf")  # monotonic: no run before, after a failure
        self._failure = ""
        self._log = log.bind(plugin=spec.name)

    async def start(self) -> IssuedToken:
        """The first run, at start-up: its failure is the caller's (one line, exit 2)."""
        async with self._lock:
            self.runs += 1
            self._current = await run_exec_plugin(
                self.spec, now=self.clock.now(), time_limit=self.timeout
            )
            return self._current

    async def token(self) -> str:
        current = self._current
        if current is not None and not self._due(current):
            return current.value
        async with self._lock:
            current = self._current
            if current is not None and not self._due(current):
                return current.value  # renewed while this request waited
            return (await self._renew(current, "expiring")).value

    async def rejected(self, authorization: str | None) -> None:
        async with self._lock:
            current = self._current
            if current is not None and authorization != self.header(current.value):
                return  # already replaced since that request was sent
            await self._renew(current, "refused")

    def _due(self, current: IssuedToken) -> bool:
        refresh_at = current.refresh_at()
        return refresh_at is not None and self.clock.now() >= refresh_at

    def _valid(self, current: IssuedToken | None) -> bool:
        if current is None or not current.value:
            return False
        return current.expires is None or self.clock.now() < current.expires

    async def _renew(self, current: IssuedToken | None, why: str) -> IssuedToken:
        if self.clock.monotonic() < self._quiet_until:
            if why == "expiring" and current is not None and self._valid(current):
                return current
            raise CredentialError(self._failure)
        self.runs += 1
        try:
            fresh = await run_exec_plugin(self.spec, now=self.clock.now(), time_limit=self.timeout)
            if fresh.client_certificate:
                raise CredentialError(
                    f"exec plugin {self.spec.name!r} answered a client certificate, not a token"
                )
        except CredentialError as exc:
            self._failure = str(exc)
            self._quiet_until = self.clock.monotonic() + RETRY_AFTER_FAILURE
            self._log.warning("could not renew exec credentials", why=why, error=str(exc))
            if why == "expiring" and current is not None and self._valid(current):
                return current
            raise
        self._current = fresh
        self._quiet_until = float("-inf")
        self._log.info("renewed exec credentials", why=why,
                       expiresAt=fresh.expires.isoformat() if fresh.expires else None)  # fmt: skip
        return fresh


# --- token files --------------------------------------------------------------------------


class TokenFileCredentials(Credentials):
    """A token read from ``path`` (the projected service-account token, which the kubelet
    rotates; a kubeconfig's ``tokenFile``), re-read every ``period`` seconds and after a
    401. An unreadable or empty file keeps the previous token (and is logged)."""

    def __init__(
        self, path: Path | str, *, clock: Clock = SYSTEM_CLOCK, period: float = REREAD_PERIOD
    ) -> None:
        self.path = Path(path)
        self.clock = clock
        self.period = period
        self.reads = 0
        self._value = ""
        self._next_read = float("-inf")

    async def token(self) -> str:
        if self.clock.monotonic() >= self._next_read:
            self._read()
        if not self._value:
            raise CredentialError(f"token file {str(self.path)!r} is unreadable or empty")
        return self._value

    async def rejected(self, authorization: str | None) -> None:
        if authorization == self.header(self._value):
            self._read()

    def _read(self) -> None:
        # A read of a small file, at most once a minute: not worth a thread.
        self.reads += 1
        self._next_read = self.clock.monotonic() + self.period
        try:
            value = self.path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("could not read token file", path=str(self.path), error=str(exc))
            return
        if not value:
            log.warning("token file is empty", path=str(self.path))
            return
        if self._value and value != self._value:
            log.info("read rotated token file", path=str(self.path))
        self._value = value


# --- auth providers -----------------------------------------------------------------------


class ProviderCredentials(Credentials):
    """A kubeconfig ``auth-provider`` (gcp, oidc): the library's loader refreshes its
    token when close to expiry; karpy asks it again every ``period`` seconds and after a
    401, one at a time."""

    def __init__(
        self, loader: Any, *, clock: Clock = SYSTEM_CLOCK, period: float = REREAD_PERIOD
    ) -> None:
        self.loader = loader
        self.clock = clock
        self.period = period
        self._lock = asyncio.Lock()
        self._next = clock.monotonic() + period

    async def token(self) -> str:
        if self.clock.monotonic() >= self._next:
            async with self._lock:
                if self.clock.monotonic() >= self._next:
                    await self._reload()
        return str(self.loader.token).removeprefix("Bearer ")

    async def rejected(self, authorization: str | None) -> None:
        async with self._lock:
            await self._reload()

    async def _reload(self) -> None:
        self._next = self.clock.monotonic() + self.period
        try:
            await self.loader._load_authentication()
        except Exception as exc:
            # The library raises ValueError, ConfigException or google-auth's errors.
            error = redact_text(f"{type(exc).__name__}: {exc}")
            log.warning("could not renew auth-provider credentials",
                        provider=str(self.loader.provider), error=error)  # fmt: skip
