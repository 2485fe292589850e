"""`karpy sandbox apiserver|cluster --crds`, given something unusable, is one line on
stderr naming the path and the problem, and exit status 2 (never a traceback)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CASES = {
    "binary": (b"\x7fELF\x02\x01\x01\x00\xd0\xff\xfe" * 20, "not UTF-8 text"),
    "empty": (b"", "empty: no CustomResourceDefinition"),
    "typo": (b"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
             b"metadata: {name: x}\nspce: {}\n", "spce: unknown field"),
    "not-a-crd": (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
                  "is not a CustomResourceDefinition"),
}  # fmt: skip


def sandbox(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "karpy", "sandbox", *args, "--port", "0"],
                          capture_output=True, text=True, timeout=30, check=False)  # fmt: skip


@pytest.mark.parametrize("command", ["apiserver", "cluster"])
@pytest.mark.parametrize("kind", [*CASES, "directory", "missing"])
def test_unusable_crds_are_one_line_and_exit_2(tmp_path: Path, command: str, kind: str) -> None:
    if kind == "directory":
        path, says = tmp_path, "a directory with no .yaml or .yml files"
    elif kind == "missing":
        path, says = tmp_path / "missing.yaml", "no such file or directory"
    else:
        content, says = CASES[kind]
        path = tmp_path / "crds.yaml"
        path.write_bytes(content)
    result = sandbox(command, "--crds", str(path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"karpy sandbox: --crds {path}")
    assert says in result.stderr
