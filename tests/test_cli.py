"""The `karpy` dispatcher: one-line errors with exit status 2, lazy command modules."""

from __future__ import annotations

import subprocess
import sys

import pytest

from karpy import __version__
from karpy.cli import main


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    assert capsys.readouterr().out.strip() == __version__


def test_unknown_command_is_one_line_with_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no-such-command"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("karpy: ") and "no-such-command" in err


def test_bad_flag_of_a_command_is_one_line_with_status_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["controller", "--metrics-port"]) == 2
    err = capsys.readouterr().err
    assert err == "karpy controller: argument --metrics-port: expected one argument\n"


@pytest.mark.parametrize(
    "argv",
    [["controller", "--batch-idle", "1s"], ["controller", "--metrics", "8000"],
     ["sandbox", "run", "--replica", "3"]],
)  # fmt: skip
def test_long_flags_must_be_spelled_out(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments" in err and err.count("\n") == 1


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "controller" in capsys.readouterr().out


def test_module_entry_point_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "karpy", "version"], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, __version__)


def test_every_listed_command_module_imports() -> None:
    import importlib

    from karpy.cli import COMMANDS

    for module_path, _ in COMMANDS.values():
        module = importlib.import_module(module_path)
        assert callable(module.add_arguments) and callable(module.run)


def test_controller_help_says_where_an_unset_kubeconfig_is_looked_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["controller", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert ("--kubeconfig PATH karpy: kubeconfig file for the API server; unset means, in a "
            "pod, its service account, else ~/.kube/config. env: KUBECONFIG,") in shown  # fmt: skip


def test_a_reader_that_leaves_early_gets_no_traceback() -> None:
    """``karpy instance-types --offline | head -1``: the pipe closes mid-answer."""
    process = subprocess.Popen(
        [sys.executable, "-m", "karpy", "instance-types", "--offline"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().startswith(b"NAME")
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 141, stderr
    assert "Traceback" not in stderr
