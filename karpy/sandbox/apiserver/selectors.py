"""Label and field selectors, parsed and matched as kube-apiserver does.

The label-selector grammar (``a=b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``,
``!a``, ``a>1``) follows apimachinery's lexer and recursive-descent parser so that both
what matches and the text of parse errors agree with a real cluster. Field selectors are
the small ``key=value``/``key!=value`` language, matched against a per-kind table of
supported field labels (an unknown label is a 400 upstream, and here).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

import attrs

from karpy.apis.fielderrors import FieldError, render_errors
from karpy.base.names import is_qualified_name, is_valid_label_value

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


class SelectorError(ValueError):
    """A selector that does not parse; the message is kube-apiserver's."""


class Op(enum.Enum):
    IN = "in"
    NOT_IN = "notin"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GT = "gt"
    LT = "lt"


@attrs.frozen(slots=True)
class Requirement:
    key: str
    op: Op
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op in (Op.IN, Op.EQUALS, Op.DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if op in (Op.NOT_IN, Op.NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if op is Op.EXISTS:
            return self.key in labels
        if op is Op.DOES_NOT_EXIST:
            return self.key not in labels
        if self.key not in labels:
            return False
        try:
            have = int(labels[self.key])
        except ValueError:
            return False
        want = int(self.values[0])
        return have > want if op is Op.GT else have < want


@attrs.frozen(slots=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()
    matches_nothing: bool = False

    @property
    def empty(self) -> bool:
        return not self.requirements and not self.matches_nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.matches_nothing:
            return False
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)


EVERYTHING = LabelSelector()

# ---------------------------------------------------------------- lexer and parser

_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_TOKENS = {
    ")": "CLOSE",
    ",": "COMMA",
    "!": "NOT",
    "==": "DEQ",
    "=": "EQ",
    ">": "GT",
    "in": "IN",
    "<": "LT",
    "!=": "NEQ",
    "notin": "NOTIN",
    "(": "OPEN",
}
_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"


def _lex(text: str) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= n:
            items.append(("EOS", ""))
            return items
        if text[pos] in _SPECIAL:
            buffer, last = "", None
            while pos < n and text[pos] in _SPECIAL:
                buffer += text[pos]
                if buffer in _TOKENS:
                    last = (_TOKENS[buffer], buffer)
                    pos += 1
                elif last is not None:
                    break
                else:
                    pos += 1
            if last is None:
                items.append(("ERROR", f"error expected: keyword found '{buffer}'"))
            else:
                items.append(last)
            continue
        start = pos
        while pos < n and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
            pos += 1
        word = text[start:pos]
        items.append((_TOKENS.get(word, "ID"), word))


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.position = 0

    def lookahead(self, values: bool = True) -> tuple[str, str]:
        tok, lit = self.items[self.position]
        if values and tok in ("IN", "NOTIN"):
            tok = "ID"
        return tok, lit

    def consume(self, values: bool = True) -> tuple[str, str]:
        tok, lit = self.lookahead(values)
        self.position += 1
        return tok, lit

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self.lookahead()
            if tok in ("ID", "NOT"):
                try:
                    requirements.append(self.requirement())
                except SelectorError as exc:
                    raise SelectorError(f"unable to parse requirement: {exc}") from None
                tok, lit = self.consume()
                if tok == "EOS":
                    return requirements
                if tok == "COMMA":
                    tok2, lit2 = self.lookahead()
                    if tok2 not in ("ID", "NOT"):
                        raise SelectorError(f"found '{lit2}', expected: identifier after ','")
                else:
                    raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            elif tok == "EOS":
                return requirements
            else:
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> Requirement:
        key, op = self.key_and_inferred_operator()
        if op in (Op.EXISTS, Op.DOES_NOT_EXIST):
            return _new_requirement(key, op, [])
        op = self.operator()
        values = self.values() if op in (Op.IN, Op.NOT_IN) else self.exact_value()
        return _new_requirement(key, op, sorted(values))

    def key_and_inferred_operator(self) -> tuple[str, Op | None]:
        op: Op | None = None
        tok, lit = self.consume()
        if tok == "NOT":
            op = Op.DOES_NOT_EXIST
            tok, lit = self.consume()
        if tok != "ID":
            raise SelectorError(f"found '{lit}', expected: identifier")
        errs = is_qualified_name(lit)
        if errs:
            raise SelectorError(FieldError.invalid("<nil>", lit, "; ".join(errs)).render())
        if self.lookahead()[0] in ("EOS", "COMMA") and op is not Op.DOES_NOT_EXIST:
            op = Op.EXISTS
        return lit, op

    def operator(self) -> Op:
        tok, lit = self.consume(values=False)
        ops = {
            "IN": Op.IN,
            "EQ": Op.EQUALS,
            "DEQ": Op.DOUBLE_EQUALS,
            "GT": Op.GT,
            "LT": Op.LT,
            "NOTIN": Op.NOT_IN,
            "NEQ": Op.NOT_EQUALS,
        }
        if tok not in ops:
            raise SelectorError(f"found '{lit}', expected: {_BINARY_OPERATORS}")
        return ops[tok]

    def values(self) -> set[str]:
        tok, lit = self.consume()
        if tok != "OPEN":
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead()
        if tok in ("ID", "COMMA"):
            found = self.identifiers()
            if self.consume()[0] != "CLOSE":
                raise SelectorError(f"found '{lit}', expected: ')'")
            return found
        if tok == "CLOSE":
            self.consume()
            return {""}
        raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")

    def identifiers(self) -> set[str]:
        found: set[str] = set()
        while True:
            tok, lit = self.consume()
            if tok == "ID":
                found.add(lit)
                tok2, lit2 = self.lookahead()
                if tok2 == "COMMA":
                    continue
                if tok2 == "CLOSE":
                    return found
                raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            if tok == "COMMA":
                if not found:
                    found.add("")
                tok2 = self.lookahead()[0]
                if tok2 == "CLOSE":
                    found.add("")
                    return found
                if tok2 == "COMMA":
                    self.consume()
                    found.add("")
                continue
            raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        tok, _ = self.lookahead()
        if tok in ("EOS", "COMMA"):
            return {""}
        tok, lit = self.consume()
        if tok == "ID":
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")


def _new_requirement(key: str, op: Op, values: list[str]) -> Requirement:
    """``labels.NewRequirement``: operator arity and label-value validation."""
    errors: list[FieldError] = []
    key_errs = is_qualified_name(key)
    if key_errs:
        errors.append(FieldError.invalid("key", key, "; ".join(key_errs)))
    if op in (Op.IN, Op.NOT_IN) and not values:
        errors.append(
            FieldError.invalid(
                "values", values, "for 'in', 'notin' operators, values set can't be empty"
            )
        )
    if op in (Op.GT, Op.LT):
        for i, v in enumerate(values):
            try:
                int(v)
            except ValueError:
                errors.append(
                    FieldError.invalid(
                        f"values[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer"
                    )
                )
    for i, v in enumerate(values):
        errs = is_valid_label_value(v)
        if errs:
            errors.append(FieldError.invalid(f"values[{i}][{key}]", v, "; ".join(errs)))
    if errors:
        raise SelectorError(render_errors(errors))
    return Requirement(key, op, tuple(values))


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse a ``labelSelector`` query parameter; raises `SelectorError`."""
    if not text:
        return EVERYTHING
    requirements = _Parser(text).parse()
    requirements.sort(key=lambda r: r.key)
    return LabelSelector(tuple(requirements))


def label_selector_from_object(selector: Mapping[str, Any] | None) -> LabelSelector:
    """``metav1.LabelSelectorAsSelector``: None matches nothing, ``{}`` everything."""
    if selector is None:
        return LabelSelector(matches_nothing=True)
    requirements: list[Requirement] = []
    for key, value in sorted((selector.get("matchLabels") or {}).items()):
        requirements.append(_new_requirement(key, Op.EQUALS, [str(value)]))
    for expr in selector.get("matchExpressions") or []:
        operator = str(expr.get("operator", ""))
        values = [str(v) for v in expr.get("values") or []]
        ops = {
            "In": Op.IN,
            "NotIn": Op.NOT_IN,
            "Exists": Op.EXISTS,
            "DoesNotExist": Op.DOES_NOT_EXIST,
        }
        if operator not in ops:
            raise SelectorError(f'"{operator}" is not a valid label selector operator')
        requirements.append(
            _new_requirement(str(expr.get("key", "")), ops[operator], sorted(values))
        )
    requirements.sort(key=lambda r: r.key)
    return LabelSelector(tuple(requirements))


def selector_to_string(selector: LabelSelector) -> str:
    parts: list[str] = []
    for r in selector.requirements:
        if r.op is Op.EXISTS:
            parts.append(r.key)
        elif r.op is Op.DOES_NOT_EXIST:
            parts.append("!" + r.key)
        elif r.op in (Op.IN, Op.NOT_IN):
            parts.append(f"{r.key} {r.op.value} ({','.join(r.values)})")
        elif r.op in (Op.GT, Op.LT):
            parts.append(f"{r.key}{'>' if r.op is Op.GT else '<'}{r.values[0]}")
        else:
            parts.append(f"{r.key}{r.op.value}{r.values[0]}")
    return ",".join(parts)


# ---------------------------------------------------------------- field selectors


@attrs.frozen(slots=True)
class FieldRequirement:
    field: str
    value: str
    negated: bool


@attrs.frozen(slots=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, fields: Callable[[str], str | None]) -> bool:
        for r in self.requirements:
            have = fields(r.field)
            have = "" if have is None else have
            if (have == r.value) == r.negated:
                return False
        return True

    def exact(self, field: str) -> str | None:
        for r in self.requirements:
            if r.field == field and not r.negated:
                return r.value
        return None


_NO_FIELDS = FieldSelector()


def _split_terms(text: str) -> list[str]:
    terms, current, escaped = [], "", False
    for ch in text:
        if escaped:
            current += "\\" + ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(current)
            current = ""
        else:
            current += ch
    terms.append(current + ("\\" if escaped else ""))
    return terms


def _unescape(value: str) -> str:
    out, escaped = "", False
    for ch in value:
        if escaped:
            if ch not in "\\,=!":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out += ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            raise SelectorError(f"invalid field selector: unescaped {ch}")
        else:
            out += ch
    return out


def _split_operator(term: str) -> tuple[str, str, str] | None:
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
        i += 1
    return None


def parse_field_selector(text: str | None) -> FieldSelector:
    """``fields.ParseSelector``; raises `SelectorError` with upstream's message."""
    if not text:
        return _NO_FIELDS
    requirements: list[FieldRequirement] = []
    for term in _split_terms(text):
        if not term:
            continue
        split = _split_operator(term)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
        lhs, op, rhs = split
        requirements.append(FieldRequirement(lhs, _unescape(rhs), op == "!="))
    return FieldSelector(tuple(requirements))
