"""`karpy controller`: the real command's exit statuses and lines, `--help`, and the
`Operator` that runs components until told to stop."""

from __future__ import annotations

import asyncio
import io
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import attrs
import orjson
import pytest
import structlog
import yaml

from karpy import cli
from karpy.log import configure_logging
from karpy.operator import ComponentFailed, Operator, serve
from karpy.settings import OPTIONS, Settings
from tests.e2e.processes import apiserver_process, free_port

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def controller_env(**settings: str) -> dict[str, str]:
    """A clean environment: only what Python needs plus the given settings, so the
    developer's own LOG_LEVEL or KUBECONFIG cannot leak into a test."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", **settings}


def run_controller(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "karpy", "controller", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def start_controller(env: dict[str, str], *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "karpy", "controller", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# --- bad configuration: status 2, one line, no traceback -------------------------------------


@pytest.mark.parametrize(
    ("env", "argv", "line"),
    [
        ({}, (), "karpy controller: CLUSTER_NAME (--cluster-name) is not set: required, the "
         "name of the cluster"),
        ({"CLUSTER_NAME": ""}, (), 'karpy controller: CLUSTER_NAME (--cluster-name) = "": '
         "required, must not be empty"),
        ({"CLUSTER_NAME": "demo", "BATCH_IDLE_DURATION": "5m"}, (),
         'karpy controller: BATCH_IDLE_DURATION (--batch-idle-duration) = "5m": must not '
         "exceed BATCH_MAX_DURATION (10s)"),
        ({"CLUSTER_NAME": "demo"}, ("--metrics-port=http",),
         'karpy controller: METRICS_PORT (--metrics-port) = "http": must be a port number in '
         "1..65535"),
        ({"CLUSTER_NAME": "demo", "FEATURE_GATES": "NodeOverlay=true", "ISOLATED_VPC": "yes"}, (),
         'karpy controller: ISOLATED_VPC (--isolated-vpc) = "yes": must be true or false'),
    ],
)  # fmt: skip
def test_bad_configuration_exits_2_with_one_line(env, argv, line):
    result = run_controller(controller_env(**env), *argv)
    assert result.returncode == 2
    assert result.stderr == line + "\n"
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_several_bad_values_are_reported_together_on_one_line():
    result = run_controller(controller_env(CLUSTER_NAME="", METRICS_PORT="0"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "METRICS_PORT" in result.stderr
    assert "CLUSTER_NAME" in result.stderr


def test_unopenable_log_output_exits_2_with_one_line(tmp_path):
    path = tmp_path / "missing" / "karpy.log"
    result = run_controller(controller_env(CLUSTER_NAME="demo", LOG_OUTPUT_PATHS=str(path)))
    assert result.returncode == 2
    assert result.stderr == (
        f'karpy controller: LOG_OUTPUT_PATHS (--log-output-paths) = "{path}": cannot open '
        f"'{path}': No such file or directory\n"
    )


# --- a good configuration: start line, clean stop on a signal --------------------------------


def test_no_kubernetes_configuration_exits_2_with_one_line(tmp_path):
    missing = tmp_path / "nowhere" / "kubeconfig"
    result = run_controller(controller_env(CLUSTER_NAME="demo", KUBECONFIG=str(missing)))
    assert result.returncode == 2
    assert result.stderr == (
        f"karpy controller: no Kubernetes API configured: kubeconfig '{missing}' does not "
        "exist and KUBERNETES_SERVICE_HOST is not set (not running in a pod)\n"
    )


def test_the_aws_provider_without_a_region_exits_2_with_one_line(emulator):
    # The region is checked before a connection is opened: nothing else is printed.
    env = controller_env(CLUSTER_NAME="demo", KUBECONFIG=str(emulator.kubeconfig),
                         HOME="/nonexistent", AWS_CONFIG_FILE="/nonexistent/config")  # fmt: skip
    result = run_controller(env)
    assert result.returncode == 2
    assert result.stderr == (
        "karpy controller: AWS_REGION is not set: the AWS provider needs the cluster's region "
        "(set AWS_REGION, or CLOUD_PROVIDER=fake for a sandbox)\n"
    )
    assert result.stdout == ""


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    with apiserver_process(tmp_path_factory.mktemp("emulator")) as server:
        yield server


def with_api(emulator, **settings: str) -> dict[str, str]:
    """Settings for a controller that can reach the emulator, on free ports."""
    return controller_env(KUBECONFIG=str(emulator.kubeconfig), METRICS_PORT=str(free_port()),
                          HEALTH_PROBE_PORT=str(free_port()), CLOUD_PROVIDER="fake",
                          **settings)  # fmt: skip


@pytest.mark.timeout(60)
@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_controller_logs_its_start_and_stops_cleanly_on_a_signal(stop_signal, emulator):
    process = start_controller(
        with_api(emulator, CLUSTER_NAME="demo", SYSTEM_NAMESPACE="karpy",
                 DISABLE_LEADER_ELECTION="true"),
        "--batch-max-duration=20s",
    )  # fmt: skip
    try:
        assert process.stdout is not None
        start = orjson.loads(process.stdout.readline())
        while "informers synced" not in process.stdout.readline():
            pass
        process.send_signal(stop_signal)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert list(start)[:4] == ["level", "time", "logger", "message"]
    assert (start["level"], start["logger"], start["message"]) == (
        "INFO",
        "controller",
        "starting controller",
    )
    assert TIME.fullmatch(start["time"])
    assert start["settings"]["clusterName"] == "demo"
    assert start["settings"]["batchMaxDuration"] == "20s"
    assert start["settings"]["leaderElectionNamespace"] == "karpy"
    rest = [orjson.loads(line) for line in out.splitlines()]
    stopping = next(line for line in rest if line["message"] == "stopping")
    assert stopping["signal"] == stop_signal.name
    assert rest[-1]["message"] == "stopped"
    assert all(line["level"] == "INFO" for line in rest)
    assert process.returncode == 0
    assert err == ""


@pytest.mark.timeout(60)
def test_a_second_signal_during_shutdown_is_absorbed(emulator):
    # Ctrl-C reaches a whole process group: a supervisor that forwards it (the sandbox
    # demo) makes the controller see two signals; it stops once, cleanly.
    process = start_controller(
        with_api(emulator, CLUSTER_NAME="demo", DISABLE_LEADER_ELECTION="true")
    )
    try:
        assert process.stdout is not None
        while "informers synced" not in process.stdout.readline():
            pass
        process.send_signal(signal.SIGINT)
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=30)
    finally:
        process.kill()
    messages = [orjson.loads(line)["message"] for line in out.splitlines()]
    assert messages.count("stopping") == 1
    assert messages[-1] == "stopped"
    assert process.returncode == 0


@pytest.mark.timeout(60)
def test_console_format_and_file_output(tmp_path, emulator):
    path = tmp_path / "karpy.log"
    process = start_controller(
        with_api(emulator, CLUSTER_NAME="demo", LOG_OUTPUT_PATHS=f"stdout,{path}",
                 LEADER_ELECTION_NAMESPACE="default"),
        "--log-format=console",
    )  # fmt: skip
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0
    assert not first.startswith("{")
    assert "starting controller" in first
    assert "[controller]" in first
    assert path.read_text().splitlines()[0] == first.rstrip("\n")


# --- --help -----------------------------------------------------------------------------------


def test_help_lists_every_setting_with_its_env_var_and_default(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as exited:
        cli.main(["controller", "--help"])
    assert exited.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    for option in OPTIONS:
        assert any(line.lstrip().startswith(option.flag) for line in lines), option.flag
        shown = option.shown_default or option.default or '""'
        assert f"env: {option.env}, default: {shown}" in [line.strip() for line in lines]
    assert "env: BATCH_MAX_DURATION, default: 10s" in [line.strip() for line in lines]


# --- the Operator ----------------------------------------------------------------------------


@attrs.define
class Waiter:
    """Runs until asked to stop, like every well-behaved component."""

    name: str = "waiter"
    stopped: bool = False

    async def run(self, stop: asyncio.Event) -> None:
        await stop.wait()
        self.stopped = True


@attrs.define
class Crasher:
    name: str = "crasher"

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.sleep(0)
        raise RuntimeError("watch stream broke")


@attrs.define
class Quitter:
    name: str = "quitter"

    async def run(self, stop: asyncio.Event) -> None:
        return


@attrs.define
class Stubborn:
    """Ignores the stop event; only cancellation ends it."""

    name: str = "stubborn"
    cancelled: bool = False

    async def run(self, stop: asyncio.Event) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


@attrs.define
class MessyStopper:
    """Stops when asked, but fails while doing so."""

    name: str = "messy"

    async def run(self, stop: asyncio.Event) -> None:
        await stop.wait()
        raise OSError("lease release failed")


@pytest.fixture
def captured_logs():
    stream = io.StringIO()
    configure_logging("info", stream=stream)
    yield stream
    structlog.reset_defaults()


def lines_of(stream: io.StringIO) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in stream.getvalue().splitlines()]


async def test_operator_runs_components_until_stop_is_set():
    waiters = [Waiter("a"), Waiter("b")]
    operator = Operator(Settings(cluster_name="c"), components=list(waiters))
    stop = asyncio.Event()
    running = asyncio.create_task(operator.run(stop))
    await asyncio.sleep(0.01)
    assert not running.done()
    stop.set()
    await running
    assert [w.stopped for w in waiters] == [True, True]


async def test_a_failing_component_stops_the_others_and_is_reported():
    waiter = Waiter()
    operator = Operator(Settings(cluster_name="c"), components=[waiter, Crasher()])
    stop = asyncio.Event()
    with pytest.raises(ComponentFailed) as failed:
        await operator.run(stop)
    assert str(failed.value) == "component crasher failed: RuntimeError: watch stream broke"
    assert isinstance(failed.value.__cause__, RuntimeError)
    assert stop.is_set()
    assert waiter.stopped


async def test_every_component_that_failed_is_reported(captured_logs):
    crashers = [Crasher("first"), Crasher("second")]
    with pytest.raises(ComponentFailed, match="component first failed"):
        await Operator(Settings(cluster_name="c"), list(crashers)).run(asyncio.Event())
    (line,) = lines_of(captured_logs)
    assert (line["message"], line["component"]) == ("component failed", "second")
    assert line["error"] == "component second failed: RuntimeError: watch stream broke"


async def test_a_component_that_returns_early_is_a_failure():
    operator = Operator(Settings(cluster_name="c"), components=[Waiter(), Quitter()])
    with pytest.raises(ComponentFailed, match="component quitter returned before shutdown"):
        await operator.run(asyncio.Event())


async def test_a_component_that_ignores_stop_is_cancelled_after_the_grace(captured_logs):
    stubborn = Stubborn()
    operator = Operator(Settings(cluster_name="c"), [Waiter(), stubborn], shutdown_grace=0.01)
    stop = asyncio.Event()
    stop.set()
    await operator.run(stop)
    assert stubborn.cancelled
    (line,) = lines_of(captured_logs)
    assert (line["level"], line["message"], line["component"]) == (
        "WARN",
        "component did not stop in time; cancelling",
        "stubborn",
    )


async def test_a_failure_while_stopping_is_logged_not_raised(captured_logs):
    stop = asyncio.Event()
    stop.set()
    await Operator(Settings(cluster_name="c"), [MessyStopper(), Waiter()]).run(stop)
    (line,) = lines_of(captured_logs)
    assert (line["level"], line["message"], line["component"], line["error"]) == (
        "ERROR",
        "component failed while stopping",
        "messy",
        "OSError: lease release failed",
    )


async def test_cancelling_the_operator_cancels_its_components():
    stubborn = Stubborn()
    running = asyncio.create_task(Operator(Settings(), [stubborn]).run(asyncio.Event()))
    await asyncio.sleep(0.01)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert stubborn.cancelled


async def test_serve_returns_1_and_logs_when_a_component_fails(captured_logs):
    status = await serve(Operator(Settings(cluster_name="c"), [Crasher()]))
    assert status == 1
    start, failed = lines_of(captured_logs)
    assert start["message"] == "starting controller"
    assert (failed["level"], failed["message"]) == ("ERROR", "controller failed")
    assert failed["error"] == "component crasher failed: RuntimeError: watch stream broke"


@pytest.mark.timeout(60)
def test_a_busy_metrics_port_stops_the_controller_before_it_takes_the_lease(emulator):
    server = yaml.safe_load(emulator.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    lease = server + "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/busy-port"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        env = with_api(emulator, CLUSTER_NAME="demo", LEADER_ELECTION_NAME="busy-port",
                       LEADER_ELECTION_NAMESPACE="kube-system")  # fmt: skip
        env["METRICS_PORT"] = str(busy.getsockname()[1])
        result = run_controller(env)
    assert result.returncode != 0
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(lease, timeout=10)
    assert missing.value.code == 404, "the lease was never taken"


def _bad_file(tmp_path: Path, kind: str) -> tuple[Path, str]:
    path = tmp_path / f"{kind}.yaml"
    if kind == "binary":
        path.write_bytes(b"\x7fELF\x02\x01\x01\x00\xd0\xff\xfe" * 20)
        return path, "not UTF-8 text"
    if kind == "empty":
        path.write_text("")
        return path, "empty"
    if kind == "directory":
        return tmp_path, "directory"
    if kind == "missing":
        return path, "does not exist"
    path.write_text("instancetypes: []\nkind: Config\n")
    return path, ""


@pytest.mark.parametrize("kind", ["binary", "empty", "directory", "missing", "typo"])
@pytest.mark.parametrize("setting", ["KUBECONFIG", "FAKE_INSTANCE_TYPES"])
def test_unusable_files_in_settings_are_one_line_and_exit_2(
    tmp_path: Path, setting: str, kind: str
) -> None:
    path, says = _bad_file(tmp_path, kind)
    env = controller_env(CLUSTER_NAME="demo", CLOUD_PROVIDER="fake", **{setting: str(path)})
    if setting == "FAKE_INSTANCE_TYPES":
        env["KUBECONFIG"] = str(_kubeconfig(tmp_path))
        says = {"missing": "no such file", "typo": "instancetypes: unknown field"}.get(kind, says)
    result = run_controller(env)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert str(path) in result.stderr and says in result.stderr


def _kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {}}],
    }))  # fmt: skip
    return path
