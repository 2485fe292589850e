"""Small helpers over celpy's parse tree: positions, and seeing through the chains of
single-child wrapper nodes (``expr -> conditionalor -> ... -> primary -> ident``) that
its grammar produces for every sub-expression."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from lark import Token, Tree

from karpy.sandbox.apiserver.schema.cel.literals import decode_literal

__all__ = ["CelCompileError", "Fn", "literal_string", "position", "unwrap", "unwrap_ident"]

# A compiled expression: reads its variables from a frame of slots, returns the value.
Fn = Callable[[list[Any]], Any]


class CelCompileError(ValueError):
    """A rule cel-go would not compile; the message is cel-go-shaped
    (``ERROR: <input>:1:5: undefined field 'foo'`` and the source line)."""


def position(node: Tree[Any] | Token) -> tuple[int, int]:
    if isinstance(node, Token):
        return node.line or 1, node.column or 1
    meta = node.meta
    if getattr(meta, "empty", True):
        return 1, 1
    return meta.line, meta.column


def unwrap_ident(tree: Any) -> str | None:
    """The identifier a wrapper chain (expr -> ... -> primary -> ident) ends in."""
    node = tree
    while isinstance(node, Tree):
        if node.data == "ident":
            return str(node.children[0])
        if len(node.children) != 1:
            return None
        node = node.children[0]
    return None


def unwrap(tree: Any, kind: str) -> Tree[Any] | None:
    node = tree
    while isinstance(node, Tree):
        if node.data == kind:
            return node
        if len(node.children) != 1:
            return None
        node = node.children[0]
    return None


def literal_string(tree: Any) -> str | None:
    literal = unwrap(tree, "literal")
    if literal is None:
        return None
    token = cast("Token", literal.children[0])
    if token.type not in ("STRING_LIT", "MLSTRING_LIT"):
        return None
    value = decode_literal(token.type, str(token))
    return value if isinstance(value, str) else None
