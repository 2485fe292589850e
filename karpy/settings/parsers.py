"""Setting values from text: one parser per kind of value, each returning the value or
raising `_Invalid` with the rule the text broke; and the errors settings raise."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from karpy.durations import DurationError, parse_duration
from karpy.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable


SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
FALLBACK_NAMESPACE = "kube-system"
LOG_LEVELS = ("debug", "info", "warn", "error")
LOG_FORMATS = ("json", "console")


class SettingsError(UsageError):
    """One or more settings are unusable; `errors` holds one sentence per problem."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("; ".join(errors))


class _Invalid(ValueError):
    """A value breaks its setting's rule; `rule` says how, in a few words."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


# --- value parsers: each takes the text and returns the value or raises _Invalid ----------

_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")
_INT64 = 2**63
_GO_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_EKS_CLUSTER_NAME = re.compile(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}\Z")
_SQS_QUEUE = re.compile(r"[A-Za-z0-9_-]{1,80}\Z|[A-Za-z0-9_-]{1,75}\.fifo\Z")


def _bool(text: str) -> bool:
    # Karpenter's boolean flags take exactly these two words.
    if text not in ("true", "false"):
        raise _Invalid("must be true or false")
    return text == "true"


def _int(text: str, minimum: int = -_INT64, rule: str = "must be an integer") -> int:
    if not _INT.match(text) or not -_INT64 <= int(text) < _INT64 or int(text) < minimum:
        raise _Invalid(rule)
    return int(text)


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in allowed:
            raise _Invalid("must be one of " + ", ".join(a for a in allowed if a))
        return text

    return parse


def _duration(minimum: int, rule: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            nanos = parse_duration(text)
        except DurationError:
            raise _Invalid("must be a duration such as 10s, 1m30s or 500ms") from None
        if nanos < minimum:
            raise _Invalid(rule)
        return nanos

    return parse


def _port(text: str) -> int:
    value = _int(text, rule="must be a port number in 1..65535")
    if not 1 <= value <= 65535:
        raise _Invalid("must be a port number in 1..65535")
    return value


def _non_negative(text: str) -> int:
    return _int(text, minimum=0, rule="must be an integer >= 0")


def _positive(text: str) -> int:
    return _int(text, minimum=1, rule="must be an integer >= 1")


def _cpu_requests(text: str) -> int:
    value = _int(text, rule="must be an integer number of millicores")
    return value if value > 0 else 1000  # as Karpenter: no request counts as one core


def _qps(text: str) -> int:
    if _int(text) == 0:
        raise _Invalid("must not be 0 (a positive rate, or negative for no client-side limit)")
    return int(text)


def _percent(text: str) -> float:
    if not _FLOAT.match(text) or not 0 <= float(text) < 1:
        raise _Invalid("must be a fraction in [0, 1), e.g. 0.075")
    return float(text)


def _log_level(text: str) -> str:
    return _choice(*LOG_LEVELS)(text) if text else "info"  # Karpenter takes empty as info


def _offering_patterns(text: str) -> tuple[tuple[str, str, str], ...]:
    """``TYPE:ZONE:CAPACITY-TYPE`` patterns, comma-separated; ``*`` matches anything."""
    patterns = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        parts = entry.split(":")
        if len(parts) != 3 or not all(parts):
            raise _Invalid(f"{entry!r} is not TYPE:ZONE:CAPACITY-TYPE (use * for any)")
        patterns.append((parts[0], parts[1], parts[2]))
    return tuple(patterns)


def _paths(text: str) -> tuple[str, ...]:
    paths = tuple(p.strip() for p in text.split(",") if p.strip())
    if not paths:
        raise _Invalid("must name at least one of stdout, stderr or a file path")
    return paths


def _cluster_name(text: str) -> str:
    # Presence is checked by `_cross_checks`, which knows whether the value was ever set.
    # The name goes into tags, IAM instance-profile names and discovery selectors, so it
    # must be what EKS accepts as a cluster name.
    if text and not _EKS_CLUSTER_NAME.match(text):
        raise _Invalid(
            "must be an EKS cluster name: 1 to 100 letters, digits, - and _, starting with "
            "a letter or digit"
        )
    return text


def _bind_address(text: str) -> str:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        raise _Invalid(
            "must be an IP address: 0.0.0.0 or :: for every interface, 127.0.0.1 for loopback only"
        ) from None
    return text


def _cluster_endpoint(text: str) -> str:
    if not text:
        return ""
    try:
        parts = urlsplit(text)
        _ = parts.port  # raises ValueError for a port that is not a number
    except ValueError:
        parts = None
    if parts is None or not parts.scheme or not parts.hostname or re.search(r"\s", text):
        raise _Invalid("must be an absolute URL with a host, e.g. https://api.example.com")
    return text


def _ca_bundle(text: str) -> str:
    if not text:
        return ""
    try:
        decoded = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise _Invalid("must be base64-encoded PEM, as EKS DescribeCluster returns it") from None
    if b"-----BEGIN CERTIFICATE-----" not in decoded:
        raise _Invalid("must decode to PEM certificates (-----BEGIN CERTIFICATE-----)")
    return text


def _queue_name(text: str) -> str:
    if text and not _SQS_QUEUE.match(text):
        raise _Invalid(
            "must be an SQS queue name (letters, digits, - and _; at most 80), not a URL"
        )
    return text


def _lease_name(text: str) -> str:
    if len(text) > 253 or not _DNS_SUBDOMAIN.match(text):
        raise _Invalid("must be a DNS subdomain name (lower-case letters, digits, - and .)")
    return text


def _namespace(text: str) -> str:
    if text and not _DNS_LABEL.match(text):
        raise _Invalid("must be a namespace name (lower-case letters, digits and -)")
    return text
