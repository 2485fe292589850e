"""The small JSONPath subset that CRDs use: printer columns, scale replica paths,
``selectableFields``.

Supported: ``.a.b``, escaped dots (``.metadata.labels.karpenter\\.sh/nodepool``),
``[0]``, ``[*]`` and equality filters (``[?(@.type=="Ready")]``). That covers every
``additionalPrinterColumns`` in Karpenter's CRDs; anything else is rejected when the CRD
is registered rather than silently evaluating to nothing.
"""

from __future__ import annotations

import re
from typing import Any

import attrs


class JSONPathError(ValueError):
    pass


@attrs.frozen(slots=True)
class _Key:
    name: str


@attrs.frozen(slots=True)
class _Index:
    index: int | None  # None = every element


@attrs.frozen(slots=True)
class _Filter:
    path: tuple[str, ...]
    value: Any


_FILTER_RE = re.compile(r"^\?\(@((?:\.[A-Za-z0-9_\-]+)+)\s*==\s*(.+)\)$")


def _parse_literal(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError as exc:
            raise JSONPathError(f"unsupported filter literal {text!r}") from exc


@attrs.frozen(slots=True)
class JSONPath:
    text: str
    steps: tuple[_Key | _Index | _Filter, ...]

    def find(self, obj: Any) -> list[Any]:
        current = [obj]
        for step in self.steps:
            following: list[Any] = []
            for value in current:
                if isinstance(step, _Key):
                    if isinstance(value, dict) and step.name in value:
                        following.append(value[step.name])
                elif isinstance(step, _Index):
                    if isinstance(value, list):
                        if step.index is None:
                            following.extend(value)
                        elif -len(value) <= step.index < len(value):
                            following.append(value[step.index])
                    elif isinstance(value, dict) and step.index is None:
                        following.extend(value.values())
                elif isinstance(value, list):
                    for item in value:
                        probe: Any = item
                        for part in step.path:
                            probe = probe.get(part) if isinstance(probe, dict) else None
                        if probe == step.value and probe is not None:
                            following.append(item)
            current = following
        return current

    def first(self, obj: Any) -> Any:
        found = self.find(obj)
        return found[0] if found else None

    def set(self, obj: dict[str, Any], value: Any) -> None:
        """Set a plain dotted path (no indexes), creating maps on the way."""
        if not self.steps or not all(isinstance(s, _Key) for s in self.steps):
            raise JSONPathError(f"cannot set through {self.text}")
        node = obj
        keys = [s.name for s in self.steps if isinstance(s, _Key)]
        for name in keys[:-1]:
            child = node.get(name)
            if not isinstance(child, dict):
                child = {}
                node[name] = child
            node = child
        node[keys[-1]] = value


def compile_path(text: str) -> JSONPath:
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    if body.startswith("$"):
        body = body[1:]
    steps: list[_Key | _Index | _Filter] = []
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch == ".":
            i += 1
            name = ""
            while i < n and body[i] not in ".[":
                if body[i] == "\\" and i + 1 < n:
                    name += body[i + 1]
                    i += 2
                    continue
                name += body[i]
                i += 1
            if not name:
                raise JSONPathError(f"empty field name in {text!r}")
            steps.append(_Key(name))
        elif ch == "[":
            end = body.find("]", i)
            if end < 0:
                raise JSONPathError(f"unclosed [ in {text!r}")
            inner = body[i + 1 : end].strip()
            i = end + 1
            if inner == "*":
                steps.append(_Index(None))
            elif inner.startswith("?"):
                m = _FILTER_RE.match(inner)
                if not m:
                    raise JSONPathError(f"unsupported filter {inner!r} in {text!r}")
                steps.append(_Filter(tuple(m.group(1)[1:].split(".")), _parse_literal(m.group(2))))
            elif inner.startswith(("'", '"')):
                steps.append(_Key(inner[1:-1]))
            else:
                try:
                    steps.append(_Index(int(inner)))
                except ValueError as exc:
                    raise JSONPathError(f"unsupported index {inner!r} in {text!r}") from exc
        else:
            raise JSONPathError(f"unexpected {ch!r} in {text!r}")
    return JSONPath(text, tuple(steps))
