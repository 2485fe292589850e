"""Go regular expressions run by Python, and Go's spellings of values in messages."""

from __future__ import annotations

import pytest

from karpy.sandbox.apiserver.schema.gofmt import go_float, go_json, go_quote, go_sharp_v
from karpy.sandbox.apiserver.schema.regex import RegexError, compile_go_regex


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("^a$", "a\n", False),
        ("(?m)^a$", "b\na\nc", True),
        (r"^\d+\z", "12", True),
        (r"\d", "٣", False),
        (r"\w+", "é", False),
        (r"\s", "\v", False),
        ("[[:alpha:]]+[[:digit:]]", "ab1", True),
        (r"\Qa.b\E", "axb", False),
        (r"\Qa.b\E", "a.b", True),
        (r"\x{41}", "A", True),
        (r"(?P<x>a)(?<y>b)", "ab", True),
        (r"^\pL+$", "héllo", True),
        (r"\101", "A", True),
        ("a{,2}", "a{,2}", True),
        ("[a-]", "-", True),
        ("(?i)abc", "ABC", True),
    ],
)
def test_go_regex_semantics(pattern, text, matches):
    assert (compile_go_regex(pattern).search(text) is not None) is matches


@pytest.mark.parametrize(
    "pattern",
    ["(?=a)", "(?!a)", "(?<=a)", r"(a)\1", "a*+", "a{1001}", r"\Z", "+", "[a", "(?U)a", "a(?i)b"],
)
def test_what_go_rejects_is_rejected(pattern):
    with pytest.raises(RegexError, match="error parsing regexp"):
        compile_go_regex(pattern)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (100.0, "100"),
        (1.5, "1.5"),
        (1e6, "1e+06"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-2.5e-7, "-2.5e-07"),
    ],
)
def test_go_float_formatting(value, text):
    assert go_float(value) == text


def test_go_json_and_quoting():
    assert go_json({"b": 1.0, "a": [True, None, "x"]}) == '{"a":[true,null,"x"],"b":1}'
    assert go_json(1e-7) == "1e-7"
    assert go_quote('a"\x01é\n') == '"a\\"\\x01é\\n"'
    assert go_sharp_v({"type": "Ready", "n": 1}) == 'map[string]interface {}{"n":1, "type":"Ready"}'
    assert go_sharp_v(["a", 1.5]) == '[]interface {}{"a", 1.5}'
