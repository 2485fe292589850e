"""The ``fieldPath`` of an ``x-kubernetes-validations`` rule, checked and normalized.

A rule's ``fieldPath`` (``.spec.replicas``, ``.labels['app.kubernetes.io/name']``) says
which field a failure is reported on, relative to the node that declares the rule. As in
``cel.ValidFieldPath``, every step must name a declared property (or, on a map, any key);
array indices are not allowed; the result is the path as ``field.Path`` prints it
(``spec.replicas``, ``labels[app.kubernetes.io/name]``), appended to the node's path.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.schema.nodes import SchemaNode

__all__ = ["parse_rule_field_path"]

_TOKENS = re.compile(r"'(?:[^'\\]|\\.)*'|[.\[\]]|[^.\[\]']+")
_UNESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_UNESCAPES.update({"'": "'", "\\": "\\"})


def _unescape(text: str) -> str:
    def replace(match: re.Match[str]) -> str:
        char = match.group(1)
        if char not in _UNESCAPES:
            raise ValueError(f"invalid string literal: invalid escape char \\{char}")
        return _UNESCAPES[char]

    return re.sub(r"\\(.)", replace, text)


def parse_rule_field_path(json_path: str, node: SchemaNode) -> str:
    """The normalized field path, or `ValueError` saying why it is not valid."""
    tokens = _TOKENS.findall(json_path)
    if "".join(tokens) != json_path:
        raise ValueError("does not refer to a valid field")
    parts: list[str] = []
    current: SchemaNode | None = node
    position = 0

    def step(name: str) -> None:
        nonlocal current
        if current is None:
            raise ValueError("does not refer to a valid field")
        if current.properties:
            child = current.properties.get(name)
            if child is None:
                raise ValueError("does not refer to a valid field")
            parts.append(f".{name}" if parts else name)
            current = child
        elif current.additional is not None:
            parts.append(f"[{name}]")
            current = current.additional
        else:
            raise ValueError("does not refer to a valid field")

    while position < len(tokens):
        token = tokens[position]
        if token == ".":
            if position + 1 >= len(tokens):
                raise ValueError("unexpected end of JSON path")
            step(tokens[position + 1])
            position += 2
        elif token == "[":
            if position + 2 >= len(tokens):
                raise ValueError("unexpected end of JSON path")
            quoted = tokens[position + 1]
            if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
                raise ValueError(f"expected single quoted string but got {quoted}")
            step(_unescape(quoted[1:-1]))
            if tokens[position + 2] != "]":
                raise ValueError(f"expected ] but got {tokens[position + 2]}")
            position += 3
        else:
            raise ValueError(f"expected [ or . but got: {token}")
    return "".join(parts)
