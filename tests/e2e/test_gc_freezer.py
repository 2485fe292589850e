"""The controller process freezes what lives out of Python's full collections
(`karpy.operator.gcfreeze`): its first step walks every object once, logs it, and
freezes the survivors; its collections are measured on /metrics."""

from __future__ import annotations

import signal
import urllib.request

from tests.e2e.processes import ControllerProcess, apiserver_process


def test_the_controller_walks_every_object_once_then_freezes_them(tmp_path) -> None:
    with apiserver_process(tmp_path) as api:
        karpy = ControllerProcess(api.kubeconfig, name="frozen")
        try:
            walked = karpy.wait_for_message("walked every object")
            assert walked["logger"] == "gc"
            assert walked["frozenBefore"] == 0
            assert walked["frozen"] > 10_000  # at least the modules karpy imported
            assert walked["unreachable"] >= 0
            url = f"http://127.0.0.1:{karpy.metrics_port}/metrics"
            with urllib.request.urlopen(url, timeout=10) as answer:
                body = answer.read().decode()
            assert 'karpy_gc_pause_seconds_count{generation="2"}' in body
        finally:
            karpy.process.send_signal(signal.SIGTERM)
            assert karpy.finish() == 0
