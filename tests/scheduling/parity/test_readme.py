"""README.md maps every Karpenter It to a test here; keep that map true.

Each ``module.py::test_name[param id]`` the README names must exist, and every parity test
must be named at least once, so a renamed or added test cannot silently drift from the
list the scheduler's authors read.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

HERE = Path(__file__).parent
REFERENCE = re.compile(r"`(test_\w+\.py)::(test_\w+)(?:\[([^\]]+)\])?`")
NOT_PARITY = {"test_harness.py", "test_readme.py"}


@functools.cache
def _test_functions(module: Path) -> frozenset[str]:
    tree = ast.parse(module.read_text())
    return frozenset(
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    )


def test_every_reference_in_the_readme_names_an_existing_test() -> None:
    for module, function, param in REFERENCE.findall((HERE / "README.md").read_text()):
        path = HERE / module
        assert path.exists(), module
        assert function in _test_functions(path), f"{module}::{function}"
        if param:
            assert f'"{param}"' in path.read_text(), f"{module}::{function}[{param}]"


def test_every_parity_test_is_listed_in_the_readme() -> None:
    referenced = {
        (module, function)
        for module, function, _ in REFERENCE.findall((HERE / "README.md").read_text())
    }
    for path in sorted(HERE.glob("test_*.py")):
        if path.name in NOT_PARITY:
            continue
        for function in _test_functions(path):
            assert (path.name, function) in referenced, f"{path.name}::{function} is not listed"
