"""An exec plugin that cannot give a token at start-up is one line and exit status 2, the
line naming the kubeconfig and the plugin, quoting its stderr and never its stdout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from karpy.errors import UsageError
from karpy.kube.transport import load_configuration
from tests.kube.plugins import ExecPlugin, write_kubeconfig


@pytest.fixture
def plugin(tmp_path):
    return ExecPlugin(tmp_path / "plugin")


async def test_a_missing_plugin_command_is_one_line(tmp_path):
    kubeconfig = ExecPlugin(tmp_path / "p").kubeconfig(
        "http://127.0.0.1:1", tmp_path / "kubeconfig", command="karpy-no-such-plugin"
    )
    with pytest.raises(UsageError) as raised:
        await load_configuration(str(kubeconfig), {})
    assert str(raised.value) == (
        f"no Kubernetes API configured: kubeconfig '{kubeconfig}': exec plugin "
        "'karpy-no-such-plugin' not found on PATH"
    )


async def test_a_missing_plugin_path_is_relative_to_the_kubeconfig(tmp_path):
    kubeconfig = ExecPlugin(tmp_path / "p").kubeconfig(
        "http://127.0.0.1:1", tmp_path / "kubeconfig", command="./bin/get-token"
    )
    with pytest.raises(UsageError, match=r"exec plugin '.*/bin/get-token' not found$"):
        await load_configuration(str(kubeconfig), {})


async def test_a_failing_plugin_is_one_line_with_its_stderr(plugin, tmp_path):
    plugin.mode("fail")
    kubeconfig = plugin.kubeconfig("http://127.0.0.1:1", tmp_path / "kubeconfig")
    with pytest.raises(UsageError) as raised:
        await load_configuration(str(kubeconfig), {})
    message = str(raised.value)
    assert "\n" not in message
    assert message == (
        f"no Kubernetes API configured: kubeconfig '{kubeconfig}': exec plugin "
        f"'{Path(sys.executable).name}' exited with status 3: error: the SSO session has "
        "expired run: aws sso login"
    )


async def test_a_plugin_printing_garbage_is_one_line_without_what_it_printed(plugin, tmp_path):
    plugin.mode("garbage")
    kubeconfig = plugin.kubeconfig("http://127.0.0.1:1", tmp_path / "kubeconfig")
    with pytest.raises(UsageError) as raised:
        await load_configuration(str(kubeconfig), {})
    assert str(raised.value).endswith("printed no ExecCredential (not JSON)")
    assert "Sign in" not in str(raised.value)


async def test_the_plugin_runs_without_a_terminal_and_with_cluster_info_if_asked(plugin, tmp_path):
    kubeconfig = plugin.kubeconfig("http://127.0.0.1:1", tmp_path / "kubeconfig")
    await load_configuration(str(kubeconfig), {})
    assert plugin.last_info == {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }
    kubeconfig = plugin.kubeconfig(
        "http://127.0.0.1:1", tmp_path / "kubeconfig", provideClusterInfo=True
    )
    await load_configuration(str(kubeconfig), {})
    assert plugin.last_info["spec"]["cluster"] == {"server": "http://127.0.0.1:1"}


@pytest.mark.parametrize(
    ("entry", "complaint"),
    [
        ({"apiVersion": "client.authentication.k8s.io/v1"}, "the exec entry has no command"),
        ({"command": "aws", "apiVersion": "client.authentication.k8s.io/v1alpha1"},
         "exec plugin 'aws': apiVersion 'client.authentication.k8s.io/v1alpha1' is not one of"),
        ({"command": "aws", "apiVersion": "client.authentication.k8s.io/v1",
          "interactiveMode": "Always"},
         "exec plugin 'aws' has interactiveMode Always, but karpy runs without a terminal"),
    ],
)  # fmt: skip
async def test_an_unusable_exec_entry_is_one_line(tmp_path, entry, complaint):
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:1", {"exec": entry})
    with pytest.raises(
        UsageError, match="^no Kubernetes API configured: kubeconfig .*: " + complaint
    ):
        await load_configuration(str(kubeconfig), {})


def test_the_controller_exits_2_with_one_line_for_a_missing_plugin(tmp_path):
    kubeconfig = ExecPlugin(tmp_path / "p").kubeconfig(
        "http://127.0.0.1:1", tmp_path / "kubeconfig", command="aws-iam-authenticator-missing"
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "CLUSTER_NAME": "demo", "HOME": str(tmp_path)}  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "karpy", "controller", "--kubeconfig", str(kubeconfig)],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == (
        f"karpy controller: no Kubernetes API configured: kubeconfig '{kubeconfig}': exec "
        "plugin 'aws-iam-authenticator-missing' not found on PATH\n"
    )
    assert result.stdout == ""
