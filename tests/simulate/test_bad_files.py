"""Every file `karpy simulate` takes, given something unusable, is one line on stderr
naming the file and the problem, and exit status 2 (never a traceback)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = str(ROOT / "deploy" / "examples" / "simulate" / "cluster.yaml")
CATALOG = str(ROOT / "deploy" / "examples" / "simulate" / "catalog.yaml")


def bad_files(tmp: Path) -> dict[str, tuple[str, str]]:
    """name -> (path, what stderr must say)"""
    binary = tmp / "binary.yaml"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\xd0\xff\xfe" * 20)
    empty = tmp / "empty.yaml"
    empty.write_text("")
    folder = tmp / "folder"
    folder.mkdir()
    typo = tmp / "typo.yaml"
    typo.write_text("instancetypes: []\n")
    return {
        "binary": (str(binary), "not UTF-8 text"),
        "empty": (str(empty), "empty"),
        "directory": (str(folder), str(folder)),
        "missing": (str(tmp / "missing.yaml"), "no such file or directory"),
        "typo": (str(typo), "unknown field"),
    }


def simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "karpy", "simulate", *args],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


@pytest.mark.parametrize("kind", ["binary", "empty", "directory", "missing", "typo"])
@pytest.mark.parametrize("role", ["snapshot", "catalog", "scheduler-config"])
def test_unusable_files_are_one_line_and_exit_2(tmp_path: Path, role: str, kind: str) -> None:
    path, says = bad_files(tmp_path)[kind]
    if role == "snapshot" and kind == "typo":
        path, says = str(tmp_path / "typo.yaml"), "object without a kind"
    args = {
        "snapshot": ["-f", path, "--instance-types", CATALOG],
        "catalog": ["-f", CLUSTER, "--instance-types", path],
        "scheduler-config": ["-f", CLUSTER, "--instance-types", CATALOG,
                             "--scheduler-config", path],
    }[role]  # fmt: skip
    result = simulate(*args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("karpy simulate: ")
    assert says in result.stderr and "Traceback" not in result.stderr
