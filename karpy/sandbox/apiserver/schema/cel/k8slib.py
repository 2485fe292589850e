"""The Kubernetes CEL libraries beyond strings and lists: quantities, URLs, IP addresses
and CIDRs, and cel-go's ``sets`` extension, as kube-apiserver offers them to CRD rules.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from typing import Any

import attrs

from karpy.sandbox.apiserver.schema.cel.library import register
from karpy.sandbox.apiserver.schema.cel.quantity import Quantity, parse_cel_quantity
from karpy.sandbox.apiserver.schema.cel.values import (
    CelEvalError,
    cel_equal,
    no_such_overload,
)

__all__ = ["CidrValue", "IpValue", "UrlValue"]


def _quantity_args(name: str, *values: Any) -> None:
    if not all(isinstance(v, Quantity) for v in values):
        raise no_such_overload(name, *values)


def _quantity(text: Any) -> Quantity:
    if not isinstance(text, str):
        raise no_such_overload("quantity", text)
    return parse_cel_quantity(text)


def _is_quantity(text: Any) -> bool:
    if not isinstance(text, str):
        raise no_such_overload("isQuantity", text)
    try:
        parse_cel_quantity(text)
    except CelEvalError:
        return False
    return True


def _as_integer(value: Any) -> int:
    _quantity_args("asInteger", value)
    result = value.as_integer()
    if result is None:
        raise CelEvalError("cannot convert value to integer")
    return int(result)


def _is_integer(value: Any) -> bool:
    _quantity_args("isInteger", value)
    return bool(value.as_integer() is not None)


def _arithmetic(name: str, sign: int) -> Any:
    def impl(value: Any, other: Any) -> Quantity:
        if isinstance(value, Quantity) and isinstance(other, int) and not isinstance(other, bool):
            return Quantity(value.value + sign * other)
        _quantity_args(name, value, other)
        return Quantity(value.value + sign * other.value)

    return impl


def _compare_to(value: Any, other: Any) -> int:
    _quantity_args("compareTo", value, other)
    return int(value.cel_compare(other))


def _is_greater_than(value: Any, other: Any) -> bool:
    _quantity_args("isGreaterThan", value, other)
    return bool(value.cel_compare(other) == 1)


def _is_less_than(value: Any, other: Any) -> bool:
    _quantity_args("isLessThan", value, other)
    return bool(value.cel_compare(other) == -1)


def _sign(value: Any) -> int:
    _quantity_args("sign", value)
    return int(value.sign())


def _approximate_float(value: Any) -> float:
    _quantity_args("asApproximateFloat", value)
    return float(value.approximate_float())


register(_quantity, "quantity(string) -> quantity")
register(_is_quantity, "isQuantity(string) -> bool")
register(_sign, "quantity.sign() -> int", "sign(quantity) -> int")
register(_is_greater_than, "quantity.isGreaterThan(quantity) -> bool")
register(_is_less_than, "quantity.isLessThan(quantity) -> bool")
register(_compare_to, "quantity.compareTo(quantity) -> int")
register(_approximate_float, "quantity.asApproximateFloat() -> double")
register(_as_integer, "quantity.asInteger() -> int")
register(_is_integer, "quantity.isInteger() -> bool")
register(
    _arithmetic("add", 1), "quantity.add(quantity) -> quantity", "quantity.add(int) -> quantity"
)
register(
    _arithmetic("sub", -1), "quantity.sub(quantity) -> quantity", "quantity.sub(int) -> quantity"
)


# --- URLs ------------------------------------------------------------------------------

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@attrs.frozen(slots=True)
class UrlValue:
    """A ``kubernetes.URL`` value (parsed as Go's ``url.ParseRequestURI``)."""

    text: str
    parts: urllib.parse.SplitResult
    cel_type_name = "kubernetes.URL"

    def cel_string(self) -> str:
        return self.text


def _parse_url(text: str) -> UrlValue | None:
    if not text or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return None
    if not text.startswith("/") and not _SCHEME.match(text):
        return None
    parts = urllib.parse.urlsplit(text)
    if " " in parts.netloc:
        return None
    return UrlValue(text, parts)


def _url(text: Any) -> UrlValue:
    if not isinstance(text, str):
        raise no_such_overload("url", text)
    parsed = _parse_url(text)
    if parsed is None:
        problem = f'parse "{text}": invalid URI for request'
        raise CelEvalError(f"URL parse error during conversion from string: {problem}")
    return parsed


def _url_part(name: str, extract: Any) -> Any:
    def impl(value: Any) -> Any:
        if not isinstance(value, UrlValue):
            raise no_such_overload(name, value)
        return extract(value.parts)

    return impl


def _hostname(parts: urllib.parse.SplitResult) -> str:
    host = parts.netloc.rpartition("@")[2]
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.partition(":")[0]


def _port(parts: urllib.parse.SplitResult) -> str:
    host = parts.netloc.rpartition("@")[2]
    if host.startswith("["):
        rest = host[host.find("]") + 1 :] if "]" in host else ""
        return rest[1:] if rest.startswith(":") else ""
    return host.partition(":")[2]


def _query(parts: urllib.parse.SplitResult) -> dict[str, list[str]]:
    return {
        k: list(v) for k, v in urllib.parse.parse_qs(parts.query, keep_blank_values=True).items()
    }


register(_url, "url(string) -> url")
register(
    lambda text: isinstance(text, str) and _parse_url(text) is not None, "isURL(string) -> bool"
)
register(_url_part("getScheme", lambda p: p.scheme), "url.getScheme() -> string")
register(_url_part("getHost", lambda p: p.netloc.rpartition("@")[2]), "url.getHost() -> string")
register(_url_part("getHostname", _hostname), "url.getHostname() -> string")
register(_url_part("getPort", _port), "url.getPort() -> string")
register(_url_part("getEscapedPath", lambda p: p.path), "url.getEscapedPath() -> string")
register(_url_part("getQuery", _query), "url.getQuery() -> dyn")


# --- IP addresses and CIDRs --------------------------------------------------------------

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@attrs.frozen(slots=True)
class IpValue:
    """A ``net.IP`` CEL value."""

    address: IPAddress
    cel_type_name = "net.IP"

    def cel_string(self) -> str:
        return str(self.address)


@attrs.frozen(slots=True)
class CidrValue:
    """A ``net.CIDR`` CEL value (the address as written, and its prefix length)."""

    address: IPAddress
    prefix: int
    cel_type_name = "net.CIDR"

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(f"{self.address}/{self.prefix}", strict=False)

    def cel_string(self) -> str:
        return f"{self.address}/{self.prefix}"


def _parse_ip(text: str) -> IPAddress:
    if "%" in text:
        raise CelEvalError("IP Address with zone value is not allowed")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise CelEvalError(
            f'IP Address "{text}" parse error during conversion from string'
        ) from None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise CelEvalError("IPv4-mapped IPv6 address is not allowed")
    return address


def _ip(value: Any) -> IpValue:
    if isinstance(value, CidrValue):
        return IpValue(value.address)
    if not isinstance(value, str):
        raise no_such_overload("ip", value)
    return IpValue(_parse_ip(value))


def _is_ip(text: Any) -> bool:
    try:
        _ip(text)
    except CelEvalError:
        return False
    return True


def _cidr(text: Any) -> CidrValue:
    if not isinstance(text, str):
        raise no_such_overload("cidr", text)
    address, slash, prefix = text.partition("/")
    if not slash or not prefix.isdigit():
        raise CelEvalError(f'network address parse error during conversion from string: "{text}"')
    parsed = _parse_ip(address)
    length = int(prefix)
    if length > parsed.max_prefixlen:
        raise CelEvalError(f'network address parse error during conversion from string: "{text}"')
    return CidrValue(parsed, length)


def _is_cidr(text: Any) -> bool:
    try:
        _cidr(text)
    except CelEvalError:
        return False
    return True


def _ip_predicate(name: str, predicate: Any) -> Any:
    def impl(value: Any) -> bool:
        if not isinstance(value, IpValue):
            raise no_such_overload(name, value)
        return bool(predicate(value.address))

    return impl


def _is_global_unicast(address: IPAddress) -> bool:
    """Go's ``IsGlobalUnicast``: not unspecified, loopback, multicast, link-local, or
    the IPv4 broadcast address."""
    if address.is_unspecified or address.is_loopback or address.is_multicast:
        return False
    if address.is_link_local:
        return False
    return not (address.version == 4 and str(address) == "255.255.255.255")


def _is_link_local_multicast(address: IPAddress) -> bool:
    if address.version == 4:
        return address in ipaddress.ip_network("224.0.0.0/24")
    return (int(address) >> 112) & 0xFF0F == 0xFF02


def _contains_ip(cidr: Any, other: Any) -> bool:
    if not isinstance(cidr, CidrValue):
        raise no_such_overload("containsIP", cidr, other)
    address = _ip(other).address if isinstance(other, str) else other
    if isinstance(address, IpValue):
        address = address.address
    if not isinstance(address, ipaddress.IPv4Address | ipaddress.IPv6Address):
        raise no_such_overload("containsIP", cidr, other)
    return address.version == cidr.address.version and address in cidr.network


def _contains_cidr(cidr: Any, other: Any) -> bool:
    if not isinstance(cidr, CidrValue):
        raise no_such_overload("containsCIDR", cidr, other)
    inner = _cidr(other) if isinstance(other, str) else other
    if not isinstance(inner, CidrValue):
        raise no_such_overload("containsCIDR", cidr, other)
    if inner.address.version != cidr.address.version:
        return False
    return inner.prefix >= cidr.prefix and inner.network.subnet_of(cidr.network)  # type: ignore[arg-type]


def _masked(cidr: Any) -> CidrValue:
    if not isinstance(cidr, CidrValue):
        raise no_such_overload("masked", cidr)
    return CidrValue(cidr.network.network_address, cidr.prefix)


def _prefix_length(cidr: Any) -> int:
    if not isinstance(cidr, CidrValue):
        raise no_such_overload("prefixLength", cidr)
    return cidr.prefix


def _is_canonical(text: Any) -> bool:
    if not isinstance(text, str):
        raise no_such_overload("ip.isCanonical", text)
    return str(_parse_ip(text)) == text


register(_ip, "ip(string) -> ip", "cidr.ip() -> ip")
register(_is_ip, "isIP(string) -> bool")
register(_is_canonical, "ip::isCanonical(string) -> bool")


def _family(value: Any) -> int:
    if not isinstance(value, IpValue):
        raise no_such_overload("family", value)
    return int(value.address.version)


register(_family, "ip.family() -> int")
register(_ip_predicate("isUnspecified", lambda a: a.is_unspecified), "ip.isUnspecified() -> bool")
register(_ip_predicate("isLoopback", lambda a: a.is_loopback), "ip.isLoopback() -> bool")
register(
    _ip_predicate("isLinkLocalMulticast", _is_link_local_multicast),
    "ip.isLinkLocalMulticast() -> bool",
)
register(
    _ip_predicate("isLinkLocalUnicast", lambda a: a.is_link_local and not a.is_multicast),
    "ip.isLinkLocalUnicast() -> bool",
)
register(_ip_predicate("isGlobalUnicast", _is_global_unicast), "ip.isGlobalUnicast() -> bool")
register(_cidr, "cidr(string) -> cidr")
register(_is_cidr, "isCIDR(string) -> bool")
register(_contains_ip, "cidr.containsIP(ip) -> bool", "cidr.containsIP(string) -> bool")
register(_contains_cidr, "cidr.containsCIDR(cidr) -> bool", "cidr.containsCIDR(string) -> bool")
register(_masked, "cidr.masked() -> cidr")
register(_prefix_length, "cidr.prefixLength() -> int")


# --- sets extension ---------------------------------------------------------------------


def _list_args(name: str, *values: Any) -> None:
    if not all(isinstance(v, list) for v in values):
        raise no_such_overload(name, *values)


def _sets_contains(left: Any, right: Any) -> bool:
    _list_args("sets.contains", left, right)
    return all(any(cel_equal(r, item) for item in left) for r in right)


def _sets_equivalent(left: Any, right: Any) -> bool:
    return _sets_contains(left, right) and _sets_contains(right, left)


def _sets_intersects(left: Any, right: Any) -> bool:
    _list_args("sets.intersects", left, right)
    return any(any(cel_equal(r, item) for item in left) for r in right)


register(_sets_contains, "sets::contains(list, list) -> bool")
register(_sets_equivalent, "sets::equivalent(list, list) -> bool")
register(_sets_intersects, "sets::intersects(list, list) -> bool")
