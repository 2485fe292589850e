"""The TLS context of new connections, rebuilt when the CA bundle changes on disk.

kubernetes-asyncio builds one `ssl.SSLContext` when its client is created and keeps it:
a CA bundle rotated under a running process (the in-cluster ``ca.crt`` when the cluster's
CA is rotated, a kubeconfig's ``certificate-authority`` file) is never seen, and new
connections fail verification until a restart. `TLSContext` looks at the bundle's file
(modification time, size, inode) at most every ``check_period`` seconds and builds a new
context from it when it changed. The transport passes `TLSContext.current` with each
request; aiohttp keys its pooled connections by context, so open connections finish as
they are and new ones use the new bundle. A bundle that does not load (half-written,
not PEM) keeps the previous context and is logged.

The context is built as the library builds it: the CA file, the client certificate and
key, ``verify_ssl`` and ``disable_strict_ssl_verification``.
"""

from __future__ import annotations

import os
import ssl
from typing import TYPE_CHECKING, Any, Final

from karpy.base.clock import SYSTEM_CLOCK
from karpy.log import get_logger

if TYPE_CHECKING:
    from karpy.base.clock import Clock

__all__ = ["TLSContext", "build_ssl_context"]

log = get_logger("kube.tls")

CHECK_PERIOD: Final = 10.0  # seconds between looks at the CA bundle's file


def build_ssl_context(configuration: Any) -> ssl.SSLContext:
    """A context as kubernetes-asyncio's REST client builds it from ``configuration``."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if getattr(configuration, "disable_strict_ssl_verification", False):
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


class TLSContext:
    """The current context for ``configuration``'s API server (see the module docstring)."""

    def __init__(
        self, configuration: Any, *, clock: Clock = SYSTEM_CLOCK, check_period: float = CHECK_PERIOD
    ) -> None:
        self.configuration = configuration
        self.clock = clock
        self.check_period = check_period
        self.path: str | None = configuration.ssl_ca_cert or None
        self.builds = 0
        self._signature = self._stat()
        self._context = self._build()
        self._next_check = clock.monotonic() + check_period

    def current(self) -> ssl.SSLContext:
        if self.path is not None and self.clock.monotonic() >= self._next_check:
            self._next_check = self.clock.monotonic() + self.check_period
            signature = self._stat()
            if signature is not None and signature != self._signature:
                try:
                    context = self._build()
                except (OSError, ssl.SSLError) as exc:
                    log.warning("could not load changed CA bundle", path=self.path,
                                error=f"{type(exc).__name__}: {exc}")  # fmt: skip
                else:
                    self._context, self._signature = context, signature
                    log.info("reloaded CA bundle", path=self.path)
        return self._context

    def _build(self) -> ssl.SSLContext:
        self.builds += 1
        return build_ssl_context(self.configuration)

    def _stat(self) -> tuple[int, int, int] | None:
        if self.path is None:
            return None
        try:
            # One stat every check_period seconds: not worth a thread.
            info = os.stat(self.path)
        except OSError:
            return None
        return (info.st_mtime_ns, info.st_size, info.st_ino)
