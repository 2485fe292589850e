"""cel-go's string extensions and Kubernetes' regex library.

Strings: ``charAt``, ``indexOf``, ``lastIndexOf`` (also on lists, from Kubernetes' list
library), ``lowerAscii``, ``upperAscii``, ``replace``, ``split``, ``substring``,
``trim``, ``join``, ``reverse``, ``format`` (``%s %d %f %e %b %o %x %X``) and
``strings.quote``; indices count Unicode code points, as Go counts runes. Regex:
``find`` and ``findAll``, with Go's RE2 semantics. Error texts are cel-go's.
"""

from __future__ import annotations

import re
from typing import Any

from karpy.sandbox.apiserver.schema.cel.library import register
from karpy.sandbox.apiserver.schema.cel.stdlib import go_regex, to_cel_string, to_double
from karpy.sandbox.apiserver.schema.cel.values import (
    CelEvalError,
    TypeValue,
    UInt,
    cel_equal,
    no_such_overload,
    type_name,
)
from karpy.sandbox.apiserver.schema.gofmt import go_quote

__all__: list[str] = []


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


# --- strings extension ----------------------------------------------------------------


def _str_args(name: str, *values: Any) -> None:
    if not all(isinstance(v, str) for v in values):
        raise no_such_overload(name, *values)


def _char_at(text: Any, index: Any) -> str:
    if not (_is_str(text) and _is_int(index)):
        raise no_such_overload("charAt", text, index)
    if index < 0 or index > len(text):
        raise CelEvalError(f"index out of range: {index}")
    return "" if index == len(text) else str(text[index])


def _index_of(value: Any, part: Any, *offset: Any) -> int:
    if isinstance(value, list) and not offset:
        for index, item in enumerate(value):
            if cel_equal(item, part):
                return index
        return -1
    if not (_is_str(value) and _is_str(part) and all(_is_int(o) for o in offset)):
        raise no_such_overload("indexOf", value, part, *offset)
    start = offset[0] if offset else 0
    if start < 0:
        raise CelEvalError(f"index out of range: {start}")
    if part == "":
        return min(start, len(value))
    if start >= len(value):
        return -1
    return int(value.find(part, start))


def _last_index_of(value: Any, part: Any, *offset: Any) -> int:
    if isinstance(value, list) and not offset:
        for index in range(len(value) - 1, -1, -1):
            if cel_equal(value[index], part):
                return index
        return -1
    if not (_is_str(value) and _is_str(part) and all(_is_int(o) for o in offset)):
        raise no_such_overload("lastIndexOf", value, part, *offset)
    if not offset:
        return len(value) if part == "" else int(value.rfind(part))
    start = offset[0]
    if start < 0:
        raise CelEvalError(f"index out of range: {start}")
    if part == "":
        return int(min(start, len(value)))
    if start >= len(value):
        return -1
    return int(value.rfind(part, 0, min(start, len(value) - len(part)) + len(part)))


def _lower_ascii(text: Any) -> str:
    _str_args("lowerAscii", text)
    return "".join(c.lower() if "A" <= c <= "Z" else c for c in text)


def _upper_ascii(text: Any) -> str:
    _str_args("upperAscii", text)
    return "".join(c.upper() if "a" <= c <= "z" else c for c in text)


def _replace(text: Any, old: Any, new: Any, *count: Any) -> str:
    _str_args("replace", text, old, new)
    limit = count[0] if count else -1
    if not _is_int(limit):
        raise no_such_overload("replace", text, old, new, *count)
    if limit == 0:
        return str(text)
    if old == "":
        pieces = list(text)
        limit = len(pieces) + 1 if limit < 0 else limit
        out = [new] if limit > 0 else []
        for i, piece in enumerate(pieces):
            out.append(piece)
            if i + 1 < limit:
                out.append(new)
        return "".join(out)
    return str(text.replace(old, new, limit if limit > 0 else -1))


def _split(text: Any, separator: Any, *count: Any) -> list[str]:
    _str_args("split", text, separator)
    limit = count[0] if count else -1
    if not _is_int(limit):
        raise no_such_overload("split", text, separator, *count)
    if limit == 0:
        return []
    if separator == "":
        chars = list(text)
        if 0 < limit < len(chars):
            return [*chars[: limit - 1], "".join(chars[limit - 1 :])]
        return chars
    return list(text.split(separator, limit - 1 if limit > 0 else -1))


def _substring(text: Any, start: Any, *end: Any) -> str:
    if not (_is_str(text) and _is_int(start) and all(_is_int(e) for e in end)):
        raise no_such_overload("substring", text, start, *end)
    stop = end[0] if end else len(text)
    if end and start > stop:
        raise CelEvalError(f"invalid substring range. start: {start}, end: {stop}")
    if start < 0 or start > len(text):
        raise CelEvalError(f"index out of range: {start}")
    if stop < 0 or stop > len(text):
        raise CelEvalError(f"index out of range: {stop}")
    return str(text[start:stop])


_GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
_GO_SPACE += "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def _trim(text: Any) -> str:
    _str_args("trim", text)
    return str(text.strip(_GO_SPACE))


def _join(items: Any, *separator: Any) -> str:
    if not isinstance(items, list) or not all(isinstance(s, str) for s in separator):
        raise no_such_overload("join", items, *separator)
    if not all(isinstance(i, str) for i in items):
        raise CelEvalError("join: list contains non-string elements")
    return (separator[0] if separator else "").join(items)


def _reverse(text: Any) -> str:
    _str_args("reverse", text)
    return str(text[::-1])


def _quote(text: Any) -> str:
    _str_args("strings.quote", text)
    return go_quote(text)


_FORMAT_VERB = re.compile(r"%(\.\d+)?([a-zA-Z%])")


def _format(template: Any, args: Any) -> str:
    if not (_is_str(template) and isinstance(args, list)):
        raise no_such_overload("format", template, args)
    remaining = iter(args)

    def verb(match: re.Match[str]) -> str:
        precision, kind = match.group(1), match.group(2)
        if kind == "%":
            return "%"
        try:
            value = next(remaining)
        except StopIteration:
            raise CelEvalError("index out of range: not enough arguments for format") from None
        if kind == "s":
            return _format_s(value)
        if kind == "d":
            if not (_is_int(value) or isinstance(value, UInt)):
                raise CelEvalError(
                    "error during formatting: decimal clause can only be used on integers, "
                    f"was given {type_name(value)}"
                )
            return str(value.value if isinstance(value, UInt) else value)
        if kind in "fe":
            digits = int(precision[1:]) if precision else 6
            number = to_double(value)
            return f"{number:.{digits}{kind}}"
        if kind in "boxX":
            number = value.value if isinstance(value, UInt) else value
            if not _is_int(number):
                raise CelEvalError(
                    f"error during formatting: only integers can be formatted with %{kind}"
                )
            return format(number, kind)
        raise CelEvalError(
            f'could not parse formatting clause: unrecognized formatting clause "{kind}"'
        )

    return _FORMAT_VERB.sub(verb, template)


def _format_s(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_format_s(v) for v in value) + "]"
    if isinstance(value, dict):
        entries = sorted((_format_s(k), _format_s(v)) for k, v in value.items())
        return "{" + ", ".join(f"{k}: {v}" for k, v in entries) + "}"
    if value is None:
        return "null"
    if isinstance(value, TypeValue):
        return value.name
    return to_cel_string(value)


register(_char_at, "string.charAt(int) -> string")
register(_index_of, "string.indexOf(string) -> int", "string.indexOf(string, int) -> int",
         "list.indexOf(any) -> int")  # fmt: skip
register(_last_index_of, "string.lastIndexOf(string) -> int",
         "string.lastIndexOf(string, int) -> int", "list.lastIndexOf(any) -> int")  # fmt: skip
register(_lower_ascii, "string.lowerAscii() -> string")
register(_upper_ascii, "string.upperAscii() -> string")
register(_replace, "string.replace(string, string) -> string",
         "string.replace(string, string, int) -> string")  # fmt: skip
register(
    _split, "string.split(string) -> list<string>", "string.split(string, int) -> list<string>"
)
register(_substring, "string.substring(int) -> string", "string.substring(int, int) -> string")
register(_trim, "string.trim() -> string")
register(_join, "list<string>.join() -> string", "list<string>.join(string) -> string")
register(_reverse, "string.reverse() -> string")
register(_quote, "strings::quote(string) -> string")
register(_format, "string.format(list) -> string")


# --- regex library -----------------------------------------------------------------


def _find(text: Any, pattern: Any) -> str:
    _str_args("find", text, pattern)
    match = go_regex(pattern).search(text)
    return match.group(0) if match else ""


def _find_all(text: Any, pattern: Any, *limit: Any) -> list[str]:
    _str_args("findAll", text, pattern)
    count = limit[0] if limit else -1
    if not _is_int(count):
        raise no_such_overload("findAll", text, pattern, *limit)
    if count == 0:
        return []
    found = [m.group(0) for m in go_regex(pattern).finditer(text)]
    return found if count < 0 else found[:count]


register(_find, "string.find(string) -> string")
register(_find_all, "string.findAll(string) -> list<string>",
         "string.findAll(string, int) -> list<string>")  # fmt: skip
