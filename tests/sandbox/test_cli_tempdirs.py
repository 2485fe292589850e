"""`karpy sandbox apiserver|cluster` without ``--kubeconfig`` write it in a temporary
directory and remove that directory when they stop, on SIGTERM as on SIGINT; a kubeconfig
asked for by path is left where it was written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

BANNER = {"apiserver": "", "cluster": "kubeconfig: "}  # what precedes the path on stdout


def start(command: str, tmpdir: Path, *args: str) -> tuple[subprocess.Popen[str], Path]:
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    process = subprocess.Popen(
        [sys.executable, "-m", "karpy", "sandbox", command, "--port", "0", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().rstrip("\n")
    assert line.startswith(BANNER[command]), (line, process.stderr)
    return process, Path(line.removeprefix(BANNER[command]))


def stop(process: subprocess.Popen[str], sig: signal.Signals) -> int:
    process.send_signal(sig)
    try:
        return process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
@pytest.mark.parametrize("command", ["apiserver", "cluster"])
def test_the_temporary_kubeconfig_directory_is_removed_on_exit(tmp_path, command, sig):
    process, kubeconfig = start(command, tmp_path)
    assert kubeconfig.is_file()
    assert kubeconfig.parent.parent == tmp_path
    assert stop(process, sig) == 0
    assert not kubeconfig.parent.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["apiserver", "cluster"])
def test_a_kubeconfig_given_by_path_is_kept(tmp_path, command):
    given = tmp_path / "mine" / "kubeconfig"
    given.parent.mkdir()
    process, kubeconfig = start(command, tmp_path, "--kubeconfig", str(given))
    assert kubeconfig == given
    assert stop(process, signal.SIGTERM) == 0
    assert given.is_file()
