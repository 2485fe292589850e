"""`karpy controller` flags: one per setting, holding text that `Settings` parses."""

from __future__ import annotations

import argparse
from typing import Any

from karpy.settings.options import OPTIONS
from karpy.settings.parsers import _bool


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps a setting's description but keeps its ``env: X, default: Y`` line whole, so
    the variable and its default can be read (and grepped) on one line."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        description, _, origin = text.partition("\n")
        return [*super()._split_lines(description, width), *filter(None, [origin])]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register every setting's flag on ``parser``. Flags hold text, checked later by
    `Settings.from_env_and_args`, so a bad flag and a bad env var fail the same way, on one
    line. A boolean flag given alone means true (``--isolated-vpc``), as in Karpenter."""
    parser.formatter_class = _HelpFormatter
    groups: dict[str, Any] = {}
    for option in OPTIONS:
        if option.group not in groups:
            groups[option.group] = parser.add_argument_group(f"{option.group} settings")
        shown = option.shown_default or option.default or '""'
        help_text = f"{option.help}\nenv: {option.env}, default: {shown}".replace("%", "%%")
        extra: dict[str, Any] = {"nargs": "?", "const": "true"} if option.parse is _bool else {}
        groups[option.group].add_argument(
            option.flag, dest=option.field, metavar=option.metavar, help=help_text, **extra
        )
