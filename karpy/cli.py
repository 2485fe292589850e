"""The `karpy` command line.

Each command lives in the package that owns it and is imported only when it runs, so
`karpy version` stays instant and `karpy simulate` never imports the API client. A
command module exposes two functions:

    add_arguments(parser: argparse.ArgumentParser) -> None
    run(args: argparse.Namespace) -> int          # the process exit status

Unusable input exits with status 2 and one line on stderr, never a traceback: command
modules raise `karpy.errors.UsageError` for that, and this module renders it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from karpy import __version__
from karpy.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Sequence


class CommandModule(Protocol):
    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


# name -> (module path, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "controller": ("karpy.operator", "run the autoscaler controller"),
    "simulate": ("karpy.simulate.cli", "show what karpy would provision for a cluster snapshot"),
    "explain": ("karpy.explain.cli", "explain a node's disruption or a pod's placement"),
    "instance-types": (
        "karpy.cloud.aws.instancetypes.cli",
        "show the instance types karpy would consider, and their allocatable",
    ),
    "sandbox": ("karpy.sandbox.cli", "run a local sandbox cluster to try karpy on"),
    "version": ("karpy.cli", "print karpy's version"),
}


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (rendered by `main`), not usage text,
    and whose long flags must be spelled out (Karpenter's are exact: ``--batch-idle``
    must not quietly mean ``--batch-idle-duration``). Sub-command parsers inherit both."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`karpy version` takes no arguments."""


def run(args: argparse.Namespace) -> int:
    print(__version__)
    return 0


def _top_level_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="karpy",
        description="karpy: a Kubernetes node autoscaler serving Karpenter's v1 API.",
    )
    parser.add_argument("--version", action="version", version=f"karpy {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        parser = _top_level_parser()
        if not argv:
            parser.print_help()
            return 2
        try:
            parser.parse_args(argv)  # --help / --version print and exit
        except UsageError as exc:
            print(f"karpy: {exc}", file=sys.stderr)
        return 2
    name, rest = argv[0], argv[1:]
    module_path, help_text = COMMANDS[name]
    module: CommandModule = importlib.import_module(module_path)
    parser = _Parser(prog=f"karpy {name}", description=help_text)
    module.add_arguments(parser)
    try:
        return module.run(parser.parse_args(rest))
    except UsageError as exc:
        print(f"karpy {name}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader left (`karpy instance-types | head`): not an error worth a traceback.
        # stdout is pointed at /dev/null so the interpreter's final flush cannot raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a command killed by the signal


if __name__ == "__main__":
    sys.exit(main())
