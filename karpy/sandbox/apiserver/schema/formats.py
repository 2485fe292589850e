"""String ``format``s the apiextensions server checks, with kube-openapi's rules.

Only the formats kube-apiserver supports for CRDs are checked (the list in
``apiextensions-apiserver/pkg/apiserver/validation/formats.go``); any other format, and
``int32``/``int64``/``float``/``double`` on numbers, is ignored, as upstream ignores them
(``int32`` does not bound an integer). Names are matched after removing dashes, as
go-openapi does (``date-time`` is ``datetime``). A value that fails its format is
reported as ``spec.at in body must be of type date-time: "junk"``.
"""

from __future__ import annotations

import base64
import ipaddress
import re
from datetime import date
from typing import TYPE_CHECKING

from karpy.durations import DurationError, parse_duration
from karpy.sandbox.apiserver.schema.cel.quantity import parse_cel_quantity
from karpy.sandbox.apiserver.schema.cel.values import CelEvalError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["check_format", "is_known_format"]

_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z")
_UUID3 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z")
_UUID4 = re.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z"
)
_UUID5 = re.compile(
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z"
)
# kube-openapi's hostname pattern, over ASCII letters and digits only (its Unicode letter
# and symbol classes are not matched).
_HOSTNAME = re.compile(
    r"^([a-zA-Z0-9]((-?[a-zA-Z0-9]{0,62})?)"
    r"|([a-zA-Z0-9](([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.)){1,}([a-zA-Z]){2,63})\Z"
)
_BASE64 = re.compile(
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})\Z"
)
_HEXCOLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})\Z")
_RGB_PART = r"\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*"
_RGBCOLOR = re.compile(rf"^rgb\({_RGB_PART},{_RGB_PART},{_RGB_PART}\)\Z")
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}\Z")
_CREDITCARD = re.compile(
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}"
    r"|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})\Z"
)
_BSON_OBJECT_ID = re.compile(r"^[0-9a-fA-F]{24}\Z")
_EMAIL = re.compile(r"^[^\s@<>()\[\]\\,;:\"]+@[^\s@<>()\[\]\\,;:\"]+\Z")
_MAC = re.compile(
    r"^([0-9A-Fa-f]{2}([:-]))([0-9A-Fa-f]{2}\2){4}[0-9A-Fa-f]{2}"
    r"(\2[0-9A-Fa-f]{2}){0,14}\Z|^([0-9A-Fa-f]{4}\.){2,9}[0-9A-Fa-f]{4}\Z"
)
_DATE_TIME_CLOCK = re.compile(
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\Z"
)
_SCALA_DURATION = re.compile(r"^\s*(?:\d+\s*[A-Za-zµ]+\s*)+\Z")
_SCALA_PART = re.compile(r"(\d+)\s*([A-Za-zµ]+)")
_SCALA_UNITS = (
    ("ns", "nano"),
    ("us", "µs", "micro"),
    ("ms", "milli"),
    ("s", "sec"),
    ("m", "min"),
    ("h", "hr", "hour"),
    ("d", "day"),
    ("w", "wk", "week"),
)
_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")


def _is_date(text: str) -> bool:
    if not re.match(r"^\d{4}-\d{2}-\d{2}\Z", text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _is_date_time(text: str) -> bool:
    if len(text) < 4:
        return False
    parts = text.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    match = _DATE_TIME_CLOCK.match(parts[1])
    if match is None:
        return False
    return match.group(1) <= "23" and match.group(2) <= "59" and match.group(3) <= "59"


def _is_duration(text: str) -> bool:
    try:
        parse_duration(text)
        return True
    except DurationError:
        pass
    if not _SCALA_DURATION.match(text):
        return False
    for _, raw_unit in _SCALA_PART.findall(text):
        unit = raw_unit.lower().strip()
        for variants in _SCALA_UNITS:
            if any(
                (i == len(variants) - 1 and unit.startswith(v)) or unit == v
                for i, v in enumerate(variants)
            ):
                return True
    return False


def _sloppy_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``netutils.ParseIPSloppy``: IPv4 parts may have leading zeros (read as decimal)."""
    if "." in text and ":" not in text:
        parts = text.split(".")
        if len(parts) != 4 or not all(p.isdigit() and len(p) <= 3 for p in parts):
            return None
        if any(int(p) > 255 for p in parts):
            return None
        return ipaddress.IPv4Address(".".join(str(int(p)) for p in parts))
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _is_ipv4(text: str) -> bool:
    return _sloppy_ip(text) is not None and "." in text


def _is_ipv6(text: str) -> bool:
    return ":" in text and _sloppy_ip(text) is not None


def _is_cidr(text: str) -> bool:
    address, slash, prefix = text.partition("/")
    if not slash or not prefix.isdigit():
        return False
    ip = _sloppy_ip(address)
    if ip is None:
        return False
    return int(prefix) <= (32 if ip.version == 4 else 128)


def _is_uri(text: str) -> bool:
    """``url.ParseRequestURI``: an absolute path, or a URI with a scheme; no control
    characters, no spaces in the host."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return False
    if text.startswith("/"):
        return True
    match = _URI_SCHEME.match(text)
    if match is None:
        return False
    rest = text[match.end() :]
    if rest.startswith("//"):
        authority = re.split(r"[/?#]", rest[2:], maxsplit=1)[0]
        if " " in authority.rpartition("@")[2]:
            return False
    return True


def _luhn(digits: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(digits)):
        value = int(char)
        if i % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _is_creditcard(text: str) -> bool:
    digits = re.sub(r"[^0-9]", "", text)
    return bool(_CREDITCARD.match(digits)) and _luhn(digits)


def _is_isbn10(text: str) -> bool:
    value = re.sub(r"[\s-]", "", text)
    if not re.match(r"^\d{9}[\dX]\Z", value):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(value))
    return total % 11 == 0


def _is_isbn13(text: str) -> bool:
    value = re.sub(r"[\s-]", "", text)
    if not re.match(r"^\d{13}\Z", value):
        return False
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(value[:12]))
    return (10 - total % 10) % 10 == int(value[12])


def _is_base64(text: str) -> bool:
    if not _BASE64.match(text):
        return False
    try:
        base64.b64decode(text, validate=True)
    except ValueError:
        return False
    return True


def _is_quantity(text: str) -> bool:
    try:
        parse_cel_quantity(text)
    except CelEvalError:
        return False
    return True


def _is_k8s_long_name(text: str) -> bool:
    return 0 < len(text) <= 253 and all(_DNS_LABEL.match(p) for p in text.split("."))


_CHECKS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: bool(_BSON_OBJECT_ID.match(s)),
    "uri": _is_uri,
    "email": lambda s: bool(_EMAIL.match(s)),
    "hostname": lambda s: (
        bool(_HOSTNAME.match(s)) and len(s) <= 255 and all(len(p) <= 63 for p in s.split("."))
    ),
    "ipv4": _is_ipv4,
    "ipv6": _is_ipv6,
    "cidr": _is_cidr,
    "mac": lambda s: bool(_MAC.match(s)),
    "uuid": lambda s: bool(_UUID.match(s)),
    "uuid3": lambda s: bool(_UUID3.match(s)),
    "uuid4": lambda s: bool(_UUID4.match(s)),
    "uuid5": lambda s: bool(_UUID5.match(s)),
    "isbn": lambda s: _is_isbn10(s) or _is_isbn13(s),
    "isbn10": _is_isbn10,
    "isbn13": _is_isbn13,
    "creditcard": _is_creditcard,
    "ssn": lambda s: bool(_SSN.match(s)),
    "hexcolor": lambda s: bool(_HEXCOLOR.match(s)),
    "rgbcolor": lambda s: bool(_RGBCOLOR.match(s)),
    "byte": _is_base64,
    "password": lambda s: True,
    "date": _is_date,
    "duration": _is_duration,
    "datetime": _is_date_time,
    "quantity": _is_quantity,
    "k8sshortname": lambda s: len(s) <= 63 and bool(_DNS_LABEL.match(s)),
    "k8slongname": _is_k8s_long_name,
}


def is_known_format(name: str) -> bool:
    return name.replace("-", "") in _CHECKS


def check_format(name: str, value: str) -> bool:
    """True when ``value`` satisfies string format ``name`` (unknown formats pass)."""
    check = _CHECKS.get(name.replace("-", ""))
    return True if check is None else check(value)
