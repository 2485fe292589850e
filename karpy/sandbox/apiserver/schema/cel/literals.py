"""CEL literal tokens (as celpy's parser returns them) decoded to values.

Strings may be raw (``r'...'``), triple-quoted, and carry CEL's escapes: ``\\a \\b \\f
\\n \\r \\t \\v \\\\ \\' \\" \\` \\?``, ``\\xHH``, ``\\uHHHH``, ``\\UHHHHHHHH`` and octal
``\\ooo``. In a bytes literal ``\\x`` and octal escapes are raw bytes.
"""

from __future__ import annotations

import re
from typing import Any

from karpy.sandbox.apiserver.schema.cel.values import INT_MAX, INT_MIN, UINT_MAX, UInt

__all__ = ["LiteralError", "decode_literal"]

_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-3][0-7]{2}|.)", re.S)
_SIMPLE = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?",
}  # fmt: skip


class LiteralError(ValueError):
    """A literal CEL's parser rejects (an out-of-range number, a bad escape)."""


def _unquote(text: str) -> tuple[str, bool]:
    raw = text[0] in "rR"
    if raw:
        text = text[1:]
    quote = text[:3] if text[:3] in ('"""', "'''") else text[0]
    return text[len(quote) : -len(quote)], raw


def _decode_escapes(body: str, as_bytes: bool) -> bytes | str:
    parts: list[bytes] = []
    position = 0
    for match in _ESCAPE.finditer(body):
        parts.append(body[position : match.start()].encode("utf-8"))
        escape = match.group(1)
        head = escape[0]
        if head == "x" and len(escape) == 3:
            code = int(escape[1:], 16)
            parts.append(bytes([code]) if as_bytes else chr(code).encode("utf-8"))
        elif head in "uU" and len(escape) > 1:
            if as_bytes:
                raise LiteralError(f"invalid escape \\{escape} in bytes literal")
            parts.append(chr(int(escape[1:], 16)).encode("utf-8"))
        elif head.isdigit() and len(escape) == 3:
            code = int(escape, 8)
            parts.append(bytes([code]) if as_bytes else chr(code).encode("utf-8"))
        elif escape in _SIMPLE:
            parts.append(_SIMPLE[escape].encode("utf-8"))
        else:
            raise LiteralError(f"invalid escape sequence \\{escape}")
        position = match.end()
    parts.append(body[position:].encode("utf-8"))
    data = b"".join(parts)
    return data if as_bytes else data.decode("utf-8", errors="surrogatepass")


def decode_literal(kind: str, text: str) -> Any:
    """The value of a literal token of ``kind`` (``INT_LIT``, ``STRING_LIT``...)."""
    if kind == "BOOL_LIT":
        return text == "true"
    if kind == "NULL_LIT":
        return None
    if kind == "INT_LIT":
        value = int(text, 16) if "0x" in text.lower() else int(text)
        if not INT_MIN <= value <= INT_MAX:
            raise LiteralError(f"invalid int literal {text}")
        return value
    if kind == "UINT_LIT":
        digits = text[:-1]
        value = int(digits, 16) if digits.lower().startswith("0x") else int(digits)
        if value > UINT_MAX or value < 0:
            raise LiteralError(f"invalid uint literal {text}")
        return UInt(value)
    if kind == "FLOAT_LIT":
        return float(text)
    if kind in ("STRING_LIT", "MLSTRING_LIT"):
        body, raw = _unquote(text)
        return body if raw else _decode_escapes(body, as_bytes=False)
    if kind == "BYTES_LIT":
        body, raw = _unquote(text[1:])
        return body.encode("utf-8") if raw else _decode_escapes(body, as_bytes=True)
    raise LiteralError(f"unknown literal {text}")
