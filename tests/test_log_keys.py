"""Structured log keys follow one convention (docs/logging.md): camelCase, as
Karpenter's JSON logs, and never a key the log line itself owns (``message``, ``level``,
``time``, ``logger``), which the renderer would have to rename."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical"})
RESERVED = frozenset({"message", "event", "level", "time", "logger"})
ALLOWED = frozenset({"exc_info"})  # structlog's own switch, not a field
SOURCES = sorted((Path(__file__).resolve().parents[1] / "karpy").rglob("*.py"))


def log_keywords(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in LOG_METHODS:
            continue
        target = node.func.value
        name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
        if "log" not in name:
            continue
        found += [(node.lineno, kw.arg) for kw in node.keywords if kw.arg is not None]
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_log_keys_are_camel_case_and_not_reserved(path: Path) -> None:
    wrong = [
        f"{path.name}:{line} {key}"
        for line, key in log_keywords(path)
        if key not in ALLOWED and ("_" in key.strip("_") or key in RESERVED)
    ]
    assert not wrong, f"log keys must be camelCase and not reserved: {wrong}"
