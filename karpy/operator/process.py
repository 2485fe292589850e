"""`karpy controller`: settings in, long-running components out, a clean stop on SIGTERM.

The process is an `Operator` holding a list of components (informers, the leader
elector, controllers, the metrics and health server) that each run until a shared `stop`
event is set. Keeping the components behind one small protocol lets each be written and
tested alone and lets wiring grow by appending to a list, without touching the shutdown
logic here.

Shutdown is the part that must be right, because Kubernetes sends SIGTERM and kills the
pod after its grace period: the first SIGTERM or SIGINT sets `stop`, components get
`shutdown_grace` seconds to return (a leader releases its lease, a launch in flight
finishes its write), and whatever is still running after that is cancelled. A component
that fails or returns before `stop` brings the whole process down with status 1 rather
than leaving a controller running with a part missing; the pod's restart policy brings
it back.

Settings are validated before anything starts; a bad value exits with status 2 and one
line on stderr (see `karpy.settings`), and so does a missing Kubernetes configuration.

`karpy.operator.wiring.Runtime` is the controller's wiring (``docs/runtime.md``): the API
transports (one rate-limited for informers and writes, one for leader election alone),
the informers feeding `ClusterState`, the leader elector with the writers it gates (the
node-lease garbage collector today; provisioning and disruption later), the event-loop
watchdog and the health and metrics servers. Losing the lease fails the elector, which
stops the process with status 1 so its Deployment restarts it as a follower.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
from typing import IO, TYPE_CHECKING

import attrs
import uvloop

from karpy import __version__
from karpy import settings as settings_module
from karpy.errors import KarpyError, UsageError
from karpy.log import configure_logging, describe_error, get_logger, open_outputs

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.base.component import Component
    from karpy.settings import Settings

log = get_logger("controller")

DEFAULT_SHUTDOWN_GRACE = 10.0  # seconds; within Kubernetes' default 30s termination grace


class ComponentFailed(KarpyError):
    """A component raised, or returned before it was asked to stop."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"component {name} {reason}")
        self.component = name


@attrs.define
class Operator:
    """Runs ``components`` side by side until ``stop`` is set or one of them fails. The
    controller's wiring appends its components to the list before `run`."""

    settings: Settings
    components: list[Component] = attrs.field(factory=list)
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE  # seconds components get to return

    async def run(self, stop: asyncio.Event) -> None:
        """Return after every component has stopped; raise `ComponentFailed` if one
        failed (the others are stopped first)."""
        tasks = [asyncio.create_task(c.run(stop), name=c.name) for c in self.components]
        stop_wait = asyncio.create_task(stop.wait(), name="stop")
        try:
            await asyncio.wait([*tasks, stop_wait], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await self._cancel(tasks)
            raise
        finally:
            stop_wait.cancel()
        # Woken by a component rather than by `stop`: whatever has ended, ended too soon.
        ended_early = [] if stop.is_set() else [task for task in tasks if task.done()]
        failures = [self._failure(task) for task in ended_early]
        stop.set()
        await self._stop([task for task in tasks if task not in ended_early])
        for also_failed in failures[1:]:
            log.error("component failed", component=also_failed.component, exc_info=also_failed)
        if failures:
            raise failures[0]

    @staticmethod
    def _failure(task: asyncio.Task[None]) -> ComponentFailed:
        name = task.get_name()
        if task.cancelled():
            return ComponentFailed(name, "was cancelled")
        exc = task.exception()
        if exc is None:
            return ComponentFailed(name, "returned before shutdown")
        failure = ComponentFailed(name, f"failed: {describe_error(exc)}")
        failure.__cause__ = exc
        return failure

    async def _stop(self, tasks: list[asyncio.Task[None]]) -> None:
        """Give ``tasks`` the grace period to return, then cancel what is left."""
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=self.shutdown_grace)
        for task in pending:
            log.warning("component did not stop in time; cancelling", component=task.get_name())
        await self._cancel(list(pending))
        for task in tasks:
            if not task.cancelled() and task.exception() is not None:
                log.error("component failed while stopping", component=task.get_name(),
                          exc_info=task.exception())  # fmt: skip

    @staticmethod
    async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# Hidden flags for tests: RuntimeTimings field -> flag (seconds).
_HIDDEN_TIMINGS = {
    "lease_duration": "--leader-election-lease-duration",
    "renew_deadline": "--leader-election-renew-deadline",
    "retry_period": "--leader-election-retry-period",
    "lease_gc_grace": "--lease-gc-grace",
    "lease_gc_period": "--lease-gc-period",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Run the autoscaler controller. Every setting is read from its environment "
        "variable and may be overridden by its flag."
    )
    settings_module.add_arguments(parser)
    for field, flag in _HIDDEN_TIMINGS.items():  # for tests: not part of the interface
        parser.add_argument(flag, dest=f"timing_{field}", type=float, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    settings = settings_module.Settings.from_env_and_args(
        os.environ,
        args,
        service_account_namespace=settings_module.read_service_account_namespace(),
    )
    stream = _open_log_outputs("log_output_paths", settings.log_output_paths)
    error_stream = _open_log_outputs("log_error_output_paths", settings.log_error_output_paths)
    configure_logging(
        settings.log_level,
        settings.log_format,
        stream=stream,
        error_stream=error_stream,
        cache_loggers=True,
    )
    overrides = {
        field: getattr(args, f"timing_{field}")
        for field in _HIDDEN_TIMINGS
        if getattr(args, f"timing_{field}", None) is not None
    }
    return uvloop.run(controller(settings, timing_overrides=overrides))


async def controller(
    settings: Settings,
    *,
    env: Mapping[str, str] | None = None,
    timing_overrides: Mapping[str, float] | None = None,
) -> int:
    """Wire the runtime for ``settings`` and serve until a signal; the exit status."""
    # Imported here so a bad setting is reported without loading the Kubernetes client.
    from karpy.operator.gcfreeze import GcFreezer  # noqa: PLC0415
    from karpy.operator.timings import RuntimeTimings  # noqa: PLC0415
    from karpy.operator.wiring import Runtime  # noqa: PLC0415

    settings_module.apply_to_process(settings)  # thread pool from CPU_REQUESTS; warnings
    timings = RuntimeTimings(**(timing_overrides or {}))
    runtime = await Runtime.create(settings, env=os.environ if env is None else env,
                                   timings=timings)  # fmt: skip
    try:
        # The collector's freezer is the process's (it freezes every object the process
        # holds), so it runs here, not in the runtime that in-process tests build.
        components = [*runtime.components, GcFreezer()]
        return await serve(Operator(settings, components=components))
    finally:
        await runtime.close()


def _open_log_outputs(field: str, paths: tuple[str, ...]) -> IO[str]:
    try:
        return open_outputs(paths)
    except OSError as exc:
        label = settings_module.OPTIONS_BY_FIELD[field].label
        shown = json.dumps(",".join(paths))
        raise UsageError(
            f"{label} = {shown}: cannot open {exc.filename!r}: {exc.strerror}"
        ) from None


async def serve(operator: Operator) -> int:
    """Run ``operator`` until SIGTERM or SIGINT; the process exit status."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT)

    def on_signal(received: signal.Signals) -> None:
        # A terminal's Ctrl-C reaches a whole process group, so a supervisor forwarding
        # it makes a second signal routine: the shutdown under way already covers it.
        if stop.is_set():
            log.debug("already stopping", signal=received.name)
            return
        log.info("stopping", signal=received.name)
        stop.set()

    for sig in signals:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        log.info(
            "starting controller",
            version=__version__,
            pid=os.getpid(),
            settings=operator.settings.as_log_fields(),
        )
        await operator.run(stop)
    except ComponentFailed as exc:
        log.error("controller failed", exc_info=exc)
        return 1
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
    log.info("stopped")
    return 0
