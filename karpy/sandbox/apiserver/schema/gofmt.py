"""Go's text forms of JSON values, as kube-apiserver's error messages print them.

Field errors and validation messages come from Go's ``fmt`` and ``encoding/json``, whose
spellings differ from Python's in ways people notice: ``%v`` prints the float 1000000.0
as ``1e+06`` and 100.0 as ``100``; ``%#v`` prints a map as
``map[string]interface {}{"type":"Ready"}``; ``%q`` escapes control characters as
``\\x01``. These helpers reproduce those spellings for the values a decoded JSON object
can hold (None, bool, int, float, str, list, dict), so the emulator's messages read
exactly like a real cluster's.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from karpy.apis.fielderrors import Rendered

__all__ = ["go_float", "go_float_plain", "go_json", "go_quote", "go_sharp_v", "go_v", "shown"]

_NAMED_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(text: str) -> str:
    """``strconv.Quote``: double quotes, printable Unicode kept, the rest escaped."""
    out = ['"']
    for char in text:
        escaped = _NAMED_ESCAPES.get(char)
        if escaped is not None:
            out.append(escaped)
        elif char.isprintable() or char == " ":
            out.append(char)
        else:
            code = ord(char)
            if code < 0x80:
                out.append(f"\\x{code:02x}")
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _shortest_digits(value: float) -> tuple[str, int]:
    """The shortest decimal digits that round-trip ``value`` (> 0), and the position of
    the decimal point relative to them (``digits[:point]`` is the integer part)."""
    sign_digits_exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(str(d) for d in sign_digits_exponent.digits).rstrip("0") or "0"
    exponent = int(sign_digits_exponent.exponent)
    point = len("".join(str(d) for d in sign_digits_exponent.digits)) + exponent
    return digits, point


def go_float(value: float) -> str:
    """``%v`` of a float64 (``strconv.FormatFloat(v, 'g', -1, 64)``): the shortest
    digits, in exponent form when the exponent is below -4 or at least 6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign = "-" if value < 0 else ""
    digits, point = _shortest_digits(abs(value))
    exponent = point - 1
    if exponent < -4 or exponent >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def go_float_plain(value: float) -> str:
    """``strconv.FormatFloat(v, 'f', -1, 64)``: shortest digits, never an exponent."""
    if value == 0 or not math.isfinite(value):
        return go_float(value)
    sign = "-" if value < 0 else ""
    digits, point = _shortest_digits(abs(value))
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _json_float(value: float) -> str:
    """``encoding/json`` of a float64: plain decimals unless tiny or huge."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude < 1e-6 or magnitude >= 1e21:
        text = go_float(value)
        # Go's JSON encoder trims "e-07" to "e-7".
        mantissa, _, exponent = text.partition("e")
        sign = exponent[0]
        return f"{mantissa}e{sign}{int(exponent[1:])}"
    return go_float_plain(value)


def go_json(value: Any) -> str:
    """``json.Marshal`` of a decoded JSON value (map keys sorted, as Go sorts them)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _json_float(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{go_quote(k)}:{go_json(value[k])}" for k in sorted(value)) + "}"
    return go_quote(str(value))


def go_v(value: Any) -> str:
    """``%v`` of a scalar: numbers and booleans bare, strings unquoted."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "<nil>"
    if isinstance(value, float):
        return go_float(value)
    return str(value)


def go_sharp_v(value: Any) -> str:
    """``%#v`` of a decoded JSON value held in an ``interface{}``."""
    if value is None:
        return "interface {}(nil)"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, list | tuple):
        return "[]interface {}{" + ", ".join(go_sharp_v(item) for item in value) + "}"
    if isinstance(value, dict):
        entries = ", ".join(f"{go_quote(k)}:{go_sharp_v(value[k])}" for k in sorted(value))
        return "map[string]interface {}{" + entries + "}"
    return go_quote(str(value))


def shown(value: Any) -> Any:
    """A bad value ready for `FieldError`: rendered as ``field.Error`` renders it.

    Strings, ints and booleans render correctly already; a null is shown as the string
    ``"null"`` (Go replaces a nil bad value by that string); floats and compound values
    get Go's own text.
    """
    if value is None:
        return "null"
    if isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        if value.isprintable():
            return value
        return Rendered(go_quote(value))
    if isinstance(value, float):
        return Rendered(go_float(value))
    return Rendered(go_sharp_v(value))
