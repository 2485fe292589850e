"""Go (RE2) regular expressions, run by Python's `re`.

kube-apiserver compiles schema ``pattern``s and CEL regexes (``matches``, ``find``,
``findAll``) with Go's ``regexp`` package. Python's `re` reads most of that syntax the
same way, but not all of it, and a handful of differences change which strings match:

- ``$`` (outside multi-line mode) matches only at the very end in Go; in Python it also
  matches before a final newline. It is rewritten to ``\\Z``.
- ``\\d``, ``\\w``, ``\\s`` are ASCII-only in Go and Unicode in Python; they are spelled
  out as ASCII classes.
- Go rejects what RE2 cannot run in linear time (look-around, back-references,
  possessive quantifiers) and a few spellings Python accepts (``\\Z``, ``{,n}`` as a
  repeat, repeats above 1000); those raise `RegexError`, as Go's compiler errors do.
- Go-only syntax is translated: ``\\z``, ``\\Q...\\E``, ``\\x{10FFFF}``, POSIX classes
  ``[[:alpha:]]``, ``(?<name>...)``, ``\\pL``/``\\p{L}`` (letters only), octal escapes.

`compile_go_regex` caches compiled patterns, so a schema's patterns and a rule's constant
regexes compile once.
"""

from __future__ import annotations

import functools
import re

__all__ = ["RegexError", "compile_go_regex", "translate_go_regex"]


class RegexError(ValueError):
    """A pattern Go's ``regexp.Compile`` would reject (or one this translator cannot run)."""


_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
# Perl classes as Go defines them (ASCII only), for use inside and outside brackets.
_PERL_IN_CLASS = {"d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r "}
_PERL_NEGATED = {"D": "d", "W": "w", "S": "s"}
_SIMPLE_ESCAPES = set("afnrtv")
_META = set("\\.+*?()|[]{}^$")
_MAX_REPEAT = 1000


def _unicode_class(name: str, negated: bool, in_class: bool) -> str:
    if name not in {"L", "Letter"}:
        raise RegexError(f"invalid character class range: `\\p{{{name}}}` is not supported")
    if in_class:
        raise RegexError("`\\pL` inside a bracket expression is not supported")
    return r"[\W\d_]" if negated else r"[^\W\d_]"


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.pos = 0
        self.out: list[str] = []
        self.multiline = False

    def error(self, message: str) -> RegexError:
        return RegexError(f"error parsing regexp: {message}: `{self.pattern}`")

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.pattern[index] if index < len(self.pattern) else ""

    def translate(self) -> str:
        pattern = self.pattern
        while self.pos < len(pattern):
            char = pattern[self.pos]
            if char == "\\":
                self.out.append(self.escape(in_class=False))
            elif char == "[":
                self.out.append(self.bracket())
            elif char == "(":
                self.out.append(self.group())
            elif char == "$":
                self.out.append("$" if self.multiline else r"\Z")
                self.pos += 1
            elif char == "{":
                self.out.append(self.brace())
            elif char in "*+?":
                self.out.append(self.quantifier())
            else:
                self.out.append(re.escape(char) if char not in _META else char)
                self.pos += 1
        return "".join(self.out)

    def quantifier(self) -> str:
        char = self.pattern[self.pos]
        self.pos += 1
        text = char
        if self.peek() == "?":
            text += "?"
            self.pos += 1
        if self.peek() in {"*", "+"} or (self.peek() == "?" and char != "?"):
            raise self.error(f"invalid nested repetition operator: `{text}{self.peek()}`")
        return text

    def brace(self) -> str:
        match = re.compile(r"\{(\d+)(,(\d*))?\}").match(self.pattern, self.pos)
        if match is None:
            self.pos += 1
            return r"\{"
        low = int(match.group(1))
        high = match.group(3)
        if low > _MAX_REPEAT or (high and int(high) > _MAX_REPEAT):
            raise self.error(f"invalid repeat count: `{match.group(0)}`")
        if high and int(high) < low:
            raise self.error(f"invalid repeat count: `{match.group(0)}`")
        self.pos = match.end()
        text = match.group(0)
        if self.peek() == "?":
            text += "?"
            self.pos += 1
        if self.peek() in {"*", "+", "{"}:
            raise self.error(f"invalid nested repetition operator: `{text}{self.peek()}`")
        return text

    def group(self) -> str:
        pattern = self.pattern
        if pattern.startswith("(?", self.pos):
            rest = pattern[self.pos + 2 :]
            if rest.startswith("P<"):
                self.pos += 2
                return "(?"
            if rest.startswith("<") and not rest.startswith(("<=", "<!")):
                self.pos += 2
                return "(?P"
            if rest.startswith(":"):
                self.pos += 3
                return "(?:"
            match = re.compile(r"\(\?([imsU]*)(-[imsU]*)?([:)])").match(pattern, self.pos)
            if match is None:
                raise self.error(
                    f"invalid or unsupported Perl syntax: `{pattern[self.pos : self.pos + 3]}`"
                )
            flags, negative, end = match.group(1), match.group(2) or "", match.group(3)
            if "U" in flags + negative:
                raise self.error("ungreedy flag `U` is not supported")
            self.pos = match.end()
            if end == ")":
                if self.out and not negative:
                    raise self.error("flags in the middle of a pattern are not supported")
                if "m" in flags:
                    self.multiline = True
                return f"(?{flags})" if flags and not negative else ""
            return f"(?{flags}{negative}:"
        self.pos += 1
        return "("

    def escape(self, in_class: bool) -> str:
        pattern = self.pattern
        if self.pos + 1 >= len(pattern):
            raise self.error("trailing backslash at end of expression")
        char = pattern[self.pos + 1]
        self.pos += 2
        if char in _PERL_IN_CLASS:
            body = _PERL_IN_CLASS[char]
            return body if in_class else f"[{body}]"
        if char in _PERL_NEGATED:
            if in_class:
                raise self.error(f"negated class `\\{char}` inside brackets is not supported")
            return f"[^{_PERL_IN_CLASS[_PERL_NEGATED[char]]}]"
        if char in {"p", "P"}:
            if self.peek() == "{":
                end = pattern.find("}", self.pos)
                if end < 0:
                    raise self.error("invalid character class range")
                name = pattern[self.pos + 1 : end]
                self.pos = end + 1
            else:
                name = self.peek()
                self.pos += 1
            return _unicode_class(name, negated=char == "P", in_class=in_class)
        if char == "z" and not in_class:
            return r"\Z"
        if char in {"A", "b", "B"} and not in_class:
            return "\\" + char
        if char == "Q":
            end = pattern.find("\\E", self.pos)
            literal = pattern[self.pos :] if end < 0 else pattern[self.pos : end]
            self.pos = len(pattern) if end < 0 else end + 2
            return "".join(_escape_literal(c, in_class) for c in literal)
        if char == "x":
            if self.peek() == "{":
                end = pattern.find("}", self.pos)
                if end < 0:
                    raise self.error("invalid escape sequence: `\\x{`")
                code = int(pattern[self.pos + 1 : end], 16)
                self.pos = end + 1
            else:
                code = int(pattern[self.pos : self.pos + 2], 16)
                self.pos += 2
            return _escape_literal(chr(code), in_class)
        if char in "01234567":
            digits = char
            while len(digits) < 3 and self.peek() in set("01234567") and self.peek():
                digits += self.peek()
                self.pos += 1
            if char != "0" and len(digits) == 1:
                raise self.error(f"invalid escape sequence: `\\{char}`")
            return _escape_literal(chr(int(digits, 8)), in_class)
        if char in _SIMPLE_ESCAPES:
            return "\\" + char
        if char.isalnum():
            raise self.error(f"invalid escape sequence: `\\{char}`")
        return _escape_literal(char, in_class)

    def bracket(self) -> str:
        pattern = self.pattern
        self.pos += 1
        parts = ["["]
        if self.peek() == "^":
            parts.append("^")
            self.pos += 1
        first = True
        while True:
            if self.pos >= len(pattern):
                raise self.error(f"missing closing ]: `{pattern}`")
            char = pattern[self.pos]
            if char == "]" and not first:
                self.pos += 1
                break
            first = False
            if char == "[" and pattern.startswith("[:", self.pos):
                end = pattern.find(":]", self.pos + 2)
                if end < 0:
                    raise self.error("invalid character class range")
                name = pattern[self.pos + 2 : end]
                negated = name.startswith("^")
                name = name.removeprefix("^")
                if name not in _POSIX_CLASSES:
                    raise self.error(f"invalid character class range: `[:{name}:]`")
                if negated:
                    raise self.error("negated POSIX classes are not supported")
                parts.append(_POSIX_CLASSES[name])
                self.pos = end + 2
            elif char == "\\":
                parts.append(self.escape(in_class=True))
            else:
                parts.append(_escape_literal(char, in_class=True) if char != "-" else "-")
                self.pos += 1
        parts.append("]")
        return "".join(parts)


def _escape_literal(char: str, in_class: bool) -> str:
    if in_class:
        return "\\" + char if char in "\\]^-[&~|" else char
    return re.escape(char)


def translate_go_regex(pattern: str) -> str:
    """Python `re` syntax with Go's meaning; raises `RegexError` where Go would."""
    return _Translator(pattern).translate()


@functools.lru_cache(maxsize=4096)
def compile_go_regex(pattern: str) -> re.Pattern[str]:
    """A compiled, cached Python pattern matching exactly what Go's would."""
    translated = translate_go_regex(pattern)
    try:
        return re.compile(translated)
    except re.error as err:
        raise RegexError(f"error parsing regexp: {err}: `{pattern}`") from None
