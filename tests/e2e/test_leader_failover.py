"""Two `karpy controller` processes against one emulator: exactly one leads, a killed
leader is replaced within the lease duration, a stopped one hands over at once, and their
leadership intervals never overlap (from their JSON logs and the Lease's own history)."""

from __future__ import annotations

import itertools
import signal
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from tests.e2e.processes import ControllerProcess, apiserver_process

LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/karpy-leader-election"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


def timings(lease: float, renew: float, retry: float) -> tuple[str, ...]:
    return (f"--leader-election-lease-duration={lease}",
            f"--leader-election-renew-deadline={renew}",
            f"--leader-election-retry-period={retry}")  # fmt: skip


def log_time(line: dict[str, Any]) -> float:
    return datetime.strptime(line["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=UTC).timestamp()  # fmt: skip


class LeaseHistory:
    """Polls the Lease and records every distinct (holder, transitions) with its time."""

    def __init__(self, url: str) -> None:
        self.url = url + LEASE
        self.records: list[tuple[float, str, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=2) as response:
                    spec = orjson.loads(response.read())["spec"]
                record = (spec.get("holderIdentity") or "", int(spec.get("leaseTransitions") or 0))
                if not self.records or self.records[-1][1:] != record:
                    self.records.append((time.time(), *record))
            except (urllib.error.URLError, OSError, KeyError):
                pass
            self._stop.wait(0.02)

    def wait_for_holder(self, name: str, timeout: float = 10.0) -> None:
        """Until the poller has seen ``name`` (its identity's prefix) hold the Lease."""
        deadline = time.monotonic() + timeout
        while not any(h.split("_")[0] == name for _, h, _ in list(self.records)):
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} never seen holding the lease: {self.records}")
            time.sleep(0.02)

    def stop(self) -> list[tuple[float, str, int]]:
        self._stop.set()
        self._thread.join(5)
        return self.records


def intervals(process: ControllerProcess, ended: float | None = None) -> list[tuple[float, float]]:
    """(started, stopped) leading, from the process' own log; ``ended`` closes an
    interval the process could not log the end of (it was killed)."""
    out: list[tuple[float, float]] = []
    start = None
    for line in process.lines:
        if line.get("message") == "started leading":
            start = log_time(line)
        elif line.get("message") == "stopped leading" and start is not None:
            out.append((start, log_time(line)))
            start = None
    if start is not None:
        out.append((start, ended if ended is not None else float("inf")))
    return out


def assert_no_overlap(*groups: list[tuple[float, float]]) -> None:
    spans = sorted(span for group in groups for span in group)
    for (_, first_end), (second_start, _) in itertools.pairwise(spans):
        assert second_start >= first_end, f"two leaders at once: {spans}"


def test_killed_leader_is_replaced_within_the_lease_duration(tmp_path):
    lease_duration = 3.0
    with apiserver_process(tmp_path) as api:
        history = LeaseHistory(api.url)
        argv = timings(lease_duration, 2.0, 0.2)
        first = ControllerProcess(api.kubeconfig, *argv, name="first")
        second = None
        try:
            first.wait_for_message("started leading")
            second = ControllerProcess(api.kubeconfig, *argv, name="second")
            second.wait_for_message("informers synced")  # a warm follower
            time.sleep(lease_duration)  # the leader renews; the follower must not lead
            assert "started leading" not in second.messages()
            first.process.send_signal(signal.SIGKILL)
            first.process.wait(10)
            killed_at = time.time()
            took_over = second.wait_for_message("started leading", timeout=30)
            assert log_time(took_over) - killed_at < lease_duration + 2.0
            history.wait_for_holder("second")
        finally:
            first.kill()
            if second is not None:
                second.process.send_signal(signal.SIGTERM)
                assert second.finish() == 0
        records = history.stop()
    assert_no_overlap(intervals(first, ended=killed_at), intervals(second))
    holders = [holder.split("_")[0] for _, holder, _ in records if holder]
    assert holders[:2] == ["first", "second"], (records, first.messages(), second.messages())
    transitions = [t for _, holder, t in records if holder]
    assert transitions[1] == transitions[0] + 1, records


def test_sigterm_hands_the_lease_over_long_before_it_would_expire(tmp_path):
    lease_duration = 8.0
    with apiserver_process(tmp_path) as api:
        history = LeaseHistory(api.url)
        argv = timings(lease_duration, 6.0, 0.2)
        first = ControllerProcess(api.kubeconfig, *argv, name="first")
        second = None
        try:
            first.wait_for_message("started leading")
            second = ControllerProcess(api.kubeconfig, *argv, name="second")
            second.wait_for_message("campaigning for the leader lease")
            second.wait_for_message("informers synced")
            first.process.send_signal(signal.SIGTERM)
            assert first.finish() == 0
            released = first.wait_for_message("released the leader lease")
            took_over = second.wait_for_message("started leading", timeout=lease_duration)
            assert log_time(took_over) - log_time(released) < lease_duration / 2
            history.wait_for_holder("second")
        finally:
            first.kill()
            if second is not None:
                second.process.send_signal(signal.SIGTERM)
                assert second.finish() == 0
        records = history.stop()
    assert_no_overlap(intervals(first), intervals(second))
    named = [(h.split("_")[0], t) for _, h, t in records if h]
    assert named[-1][0] == "second", records
    assert named[-1][1] == named[0][1] + 1, records  # one takeover, counted


def test_a_leader_that_cannot_renew_stops_and_exits_non_zero(tmp_path):
    with apiserver_process(tmp_path) as api:
        leader = ControllerProcess(api.kubeconfig, *timings(3.0, 1.5, 0.2), name="leader")
        try:
            leader.wait_for_message("started leading")
            fault = {"method": "*", "path": LEASE, "action": "error", "status": 500,
                     "count": None}  # fmt: skip
            request = urllib.request.Request(
                api.url + "/_emulator/faults", data=orjson.dumps(fault), method="POST",
                headers={"Content-Type": "application/json"},
            )  # fmt: skip
            urllib.request.urlopen(request, timeout=5).close()
            status = leader.finish(timeout=30)
        finally:
            leader.kill()
    messages = leader.messages()
    assert status == 1
    assert "failed to renew the leader lease in time" in messages
    assert messages.index("stopped leading") > messages.index("started leading")
    assert "released the leader lease" not in messages
