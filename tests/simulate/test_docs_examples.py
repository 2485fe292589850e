"""The `karpy simulate` commands in docs/simulate.md that name the shipped examples run as
written, from the repository root, and print what the page shows."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "simulate.md").read_text(encoding="utf-8")
COMMANDS = sorted(set(re.findall(r"^\$ (karpy simulate .*deploy/examples/.*)$", DOC, re.M)))


def test_the_page_documents_commands_on_the_shipped_examples():
    assert len(COMMANDS) >= 2
    for command in COMMANDS:
        for path in re.findall(r"deploy/examples/\S+", command):
            assert (ROOT / path).is_file(), path


@pytest.mark.parametrize("command", COMMANDS)
def test_a_documented_command_runs_as_written(command: str):
    argv = shlex.split(command)
    result = subprocess.run([sys.executable, "-m", "karpy", *argv[1:]], cwd=ROOT,
                            capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    if "-o table" in command:
        shown = DOC.split(f"$ {command}\n", 1)[1].split("```", 1)[0]
        expected = [line for line in shown.splitlines() if not line.startswith("4 pods")]
        actual = [line for line in result.stdout.splitlines() if not line.startswith("4 pods")]
        assert actual == expected, "the page shows what the command prints"
