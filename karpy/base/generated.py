"""The command behind a generated docs page: write it, or check it is up to date.

The settings and metrics references (``docs/reference/``) are rendered from the code, and a
test fails when the committed page differs, so both generators share one command line:
``python -m <module> [--out PAGE] [--check]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["generated_page_main"]


def generated_page_main(
    prog: str, default_out: Path, render: Callable[[], str], argv: list[str] | None = None
) -> int:
    """Write ``render()`` to the page, or with ``--check`` exit 1 when the page differs."""
    parser = argparse.ArgumentParser(prog=f"python -m {prog}")
    parser.add_argument("--out", type=Path, default=default_out, help="the page to write")
    parser.add_argument(
        "--check", action="store_true", help="compare instead of writing; exit 1 on a difference"
    )
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not args.out.exists() or args.out.read_text() != text:
            print(f"out of date: {args.out} (run python -m {prog})", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    return 0
