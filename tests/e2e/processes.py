"""Processes for end-to-end tests: the API server emulator and `karpy controller`, each
as a real subprocess speaking HTTP on loopback.

`ApiServerProcess` starts ``karpy sandbox apiserver --port 0`` and reads the kubeconfig
path it prints; `ControllerProcess` starts ``karpy controller`` against it with free
metrics and health ports and collects its JSON log lines on a thread, so a test can wait
for a message without blocking on a pipe.
"""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import orjson
import yaml

from karpy.sandbox.aws import CATALOG_CACHE_ENV

# Ports handed to a process that binds them later. A port the kernel picks (bind to 0) can
# be picked again by anything else binding to 0 before the process binds it: with eight
# workers starting emulators, sandboxes and moto servers that happened, and a controller
# died of "address already in use". Ports below the kernel's ephemeral range are never
# picked that way; each xdist worker takes its own thousand of them, in turn.
_PORT_SLOTS: Final = 1000
_next_slot = itertools.count()


def _ephemeral_floor() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    floor = _ephemeral_floor()
    base = floor - _PORT_SLOTS * (int(worker) + 1) if worker.isdigit() else 0
    if base >= 1024:
        for _ in range(_PORT_SLOTS):
            port = base + next(_next_slot) % _PORT_SLOTS
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    with socket.socket() as sock:  # no room below the range: the kernel's choice
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """Only what Python needs, so a developer's KUBECONFIG or LOG_LEVEL cannot leak in, and
    the run's moto catalogue directory (tests/conftest.py), which changes no answer."""
    shared = {CATALOG_CACHE_ENV: os.environ[CATALOG_CACHE_ENV]} if (
        os.environ.get(CATALOG_CACHE_ENV)) else {}  # fmt: skip
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", **shared,
            **extra}  # fmt: skip


class ApiServerProcess:
    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.kubeconfig = tmp_path / "kubeconfig"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "karpy", "sandbox", "apiserver", "--port", "0",
             "--kubeconfig", str(self.kubeconfig), *args],
            env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        first = self.process.stdout.readline().strip()
        if first != str(self.kubeconfig):
            self.stop()
            raise RuntimeError(f"emulator did not start: {first!r}")
        config = yaml.safe_load(self.kubeconfig.read_text())
        self.url: str = config["clusters"][0]["cluster"]["server"]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextmanager
def apiserver_process(tmp_path: Path, *args: str) -> Iterator[ApiServerProcess]:
    server = ApiServerProcess(tmp_path, *args)
    try:
        yield server
    finally:
        server.stop()


class ControllerProcess:
    """``karpy controller`` against ``kubeconfig``; `lines` fills as it logs."""

    def __init__(self, kubeconfig: Path, *argv: str, env: Mapping[str, str] | None = None,
                 name: str = "controller") -> None:  # fmt: skip
        self.name = name
        self.metrics_port = free_port()
        self.health_port = free_port()
        settings = {
            "CLUSTER_NAME": "e2e",
            "CLOUD_PROVIDER": "fake",
            "KUBECONFIG": str(kubeconfig),
            "METRICS_PORT": str(self.metrics_port),
            "HEALTH_PROBE_PORT": str(self.health_port),
            "LEADER_ELECTION_NAMESPACE": "kube-system",
            "POD_NAME": name,
            **(env or {}),
        }
        # A file, not a pipe: a long run's warnings must never fill a pipe nobody reads.
        self._stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed by finish
        self.process = subprocess.Popen(
            [sys.executable, "-m", "karpy", "controller", *argv],
            env=clean_env(**settings), stdout=subprocess.PIPE, stderr=self._stderr, text=True,
        )  # fmt: skip
        self.lines: list[dict[str, Any]] = []
        self.stderr = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            try:
                self.lines.append(orjson.loads(raw))
            except orjson.JSONDecodeError:
                self.lines.append({"message": raw.rstrip("\n"), "level": "RAW"})

    def messages(self) -> list[str]:
        return [str(line.get("message")) for line in list(self.lines)]

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 20.0
                 ) -> dict[str, Any]:  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if predicate(line):
                    return line
            if self.process.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.02)
        errors = [line.get("error") for line in list(self.lines) if line.get("error")]
        raise AssertionError(f"{self.name}: no matching log line; saw {self.messages()}"
                             + (f"; errors: {errors}" if errors else ""))  # fmt: skip

    def wait_for_message(self, message: str, timeout: float = 20.0) -> dict[str, Any]:
        return self.wait_for(lambda line: line.get("message") == message, timeout)

    def finish(self, timeout: float = 20.0) -> int:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(5)
        if not self._stderr.closed:
            self._stderr.seek(0)
            self.stderr = self._stderr.read()
            self._stderr.close()
        return int(self.process.returncode)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.finish()
