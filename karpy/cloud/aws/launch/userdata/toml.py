"""A small TOML writer for Bottlerocket settings (the standard library only reads TOML).

It writes what Bottlerocket user data holds: tables, strings, integers, booleans, floats
and (nested) arrays of those. Within a table, plain values come before sub-tables and
keep the order of the mapping, so the caller decides the order (Karpenter's typed
Kubernetes settings keep their field order; everything else is sorted). Strings are
literal (``'...'``) when they can be, keys bare when they can be, as Go's go-toml writes.

Every string (value or key) reads back as exactly itself: a literal string is used only
for text without ``'`` and control characters; anything else is a basic string with
``\\``, ``"`` and every control character (DEL included) escaped, so no value can close
its string and start a key or table of its own. Dates and times from the user's TOML are
written back as TOML dates and times.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["dumps"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _string(value: str) -> str:
    if "'" not in value and not _CONTROL.search(value):
        return f"'{value}'"
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    escaped = _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", escaped)
    return f'"{escaped}"'


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, Sequence):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _table(path: list[str], table: Mapping[str, Any], out: list[str]) -> None:
    if out and not out[-1].startswith("["):
        out.append("\n")  # a blank line between tables, none right after a bare header
    out.append("[" + ".".join(_key(p) for p in path) + "]\n")
    subtables = []
    for key, value in table.items():
        if isinstance(value, Mapping):
            subtables.append((key, value))
        else:
            out.append(f"{_key(key)} = {_value(value)}\n")
    for key, value in subtables:
        _table([*path, key], value, out)


def dumps(document: Mapping[str, Mapping[str, Any]]) -> str:
    """``document`` (top-level tables only) as TOML text."""
    out: list[str] = []
    for key, table in document.items():
        _table([key], table, out)
    return "".join(out)
