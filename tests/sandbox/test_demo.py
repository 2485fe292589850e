"""`karpy sandbox run` (what `make run` starts) as a user runs it: a subprocess whose
output narrates the demo and whose exit status says whether it reached its end."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow]


def sandbox_run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "karpy", "sandbox", "run", *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def workdir_of(stdout: str) -> Path:
    match = re.search(r"kubeconfig: (\S+)/kubeconfig", stdout)
    assert match, stdout
    return Path(match.group(1))


def kept_log(stdout: str, *, written: bool = True) -> Path:
    """The controller's log the demo says it kept: it exists after the demo (then removed
    here, as a user would once read)."""
    match = re.search(r"^karpy controller's log is kept: (\S+)$", stdout, re.MULTILINE)
    assert match, stdout
    log = Path(match.group(1))
    assert log.is_file() and (log.stat().st_size > 0 or not written), log
    assert f"its log: {log}" in stdout
    log.unlink()
    return log


def test_the_demo_scales_up_twice_and_down_and_leaves_nothing_behind():
    result = sandbox_run("--replicas", "3", "--scale-up", "8", "--scale-to", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "applied the example EC2NodeClass and NodePool" in out
    assert re.search(r"nodeclaim default-\w+ launched: [csm]-\d+x-(amd|arm)64-linux in test-zone-"
                     r"[abcd] \((spot|on-demand), \$\d+\.\d{4}/h\)", out), out  # fmt: skip
    for line in ("all 3 pods are running on karpy's nodes", "all 8 pods are running on karpy's "
                 "nodes", "scaled inflate down to 1 pods", "1 pods running"):  # fmt: skip
        assert line in out, out
    assert re.search(r"^  \d+ nodes?, \$\d+\.\d{4}/h$", out, re.MULTILINE), out
    # The emptied capacity is consolidated away: one pod left, one node left; the wait
    # says what it waits for, each disrupted node is named with its reason and price, and
    # the saving is given.
    assert re.search(r"\] waiting for consolidation \(\d+s\): ", out), out
    assert re.search(r"\] karpy disrupts node default-\w+ \([csm]-\d+x-\w+-linux in test-zone-"
                     r"[abcd] \((spot|on-demand), \$\d+\.\d{4}/h\)\): (Empty|Underutilized) — "
                     r"(delete|replace) \d+ node", out), out  # fmt: skip
    saving = re.search(r"consolidated: saves \$(\d+\.\d{4})/h \(\$(\d+\.\d{4})/h -> "
                       r"\$(\d+\.\d{4})/h\):", out)  # fmt: skip
    assert saving and float(saving[1]) > 0, out
    consolidated = out[out.index("consolidated:") :]
    assert re.search(r"^  1 node, \$\d+\.\d{4}/h$", consolidated, re.MULTILINE), out
    assert f"1 node, ${saving[3]}/h" in consolidated
    assert not workdir_of(out).exists(), "the temporary kubeconfig is removed"
    kept_log(out)


def test_a_demo_that_does_not_reach_its_end_fails_and_shows_the_controller_log():
    # Nodes take 0.5 s to become Ready in the demo's sandbox: 0.2 s per step cannot do.
    result = sandbox_run("--replicas", "5", "--timeout", "0.2")
    assert result.returncode == 1
    assert "demo failed: timed out after 0s while scaling up:" in result.stdout, result.stdout
    assert "lines of the controller's log:" in result.stderr
    assert not workdir_of(result.stdout).exists()
    kept_log(result.stdout, written=False)  # stopped within 0.2 s: maybe before a line


@pytest.mark.parametrize(
    "args",
    [("--replicas", "0"), ("--scale-up", "-1"), ("--replicas", "2", "--scale-to", "5",
                                                 "--scale-up", "0")],
)  # fmt: skip
def test_impossible_step_sizes_are_one_line_usage_errors(args):
    result = sandbox_run(*args, timeout=30)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "need replicas >= 1" in result.stderr


def test_the_aws_demo_launches_ec2_instances_and_consolidates_them():
    result = sandbox_run("--cloud", "aws", "--replicas", "3", "--scale-up", "8", "--scale-to", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert re.search(r"^AWS_ENDPOINT_URL=http://127\.0\.0\.1:\d+$", out, re.MULTILINE), out
    assert re.search(r"nodeclaim default-\w+ launched: [cmr]\d\w*\.\w+ in us-west-2[abc] "
                     r"\((spot|on-demand)", out), out  # fmt: skip
    consolidated = out[out.index("consolidated:") :]
    assert re.search(r"^  1 node, \$\d+\.\d{4}/h$", consolidated, re.MULTILINE), out
    assert "price n/a" not in out, out
    kept_log(out)
