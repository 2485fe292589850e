"""On-demand profiles of the running controller (``ENABLE_PROFILING=true``).

``/debug/pprof/profile?seconds=N`` samples the event-loop thread for N seconds with
pyinstrument and answers an HTML flame view (``&format=speedscope`` for speedscope JSON,
``&format=text`` for a call tree). The sampler's cost is paid only while a profile runs.

``/debug/pprof/heap`` answers the top allocations by source line from `tracemalloc`. The
first request starts tracing (Python then records a traceback for every allocation: about
a third more memory for the traced objects and allocations several times slower) and
answers what was allocated since; later requests show what is live and was allocated
since tracing began; ``?stop=true`` stops tracing and frees its memory. ``?types=true``
adds live object counts by type (a walk over every object the GC tracks).

Both cost the controller real CPU and memory, so whoever can reach the metrics port must
not be able to keep it busy: one CPU profile runs at a time, a new one starts at least
``min_interval`` seconds after the last one ended, and heap snapshots are as far apart.
A request refused for either reason is answered 429 with a ``Retry-After`` header (whole
seconds). ``?stop=true`` is never refused: turning tracing off only frees memory.
"""

from __future__ import annotations

import asyncio
import gc
import math
import time
import tracemalloc
from collections import Counter
from typing import TYPE_CHECKING, Final

from aiohttp import web
from pyinstrument import Profiler
from pyinstrument.renderers import SpeedscopeRenderer

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Profiling"]

MAX_SECONDS: Final = 300.0
DEFAULT_SECONDS: Final = 30.0
MIN_INTERVAL: Final = 10.0  # seconds from the end of one profile to the start of the next


class Profiling:
    """The profiling routes; ``clock`` (monotonic seconds) times the rate limit."""

    def __init__(
        self, *, clock: Callable[[], float] = time.monotonic, min_interval: float = MIN_INTERVAL
    ) -> None:
        self._busy = asyncio.Lock()
        self._clock = clock
        self.min_interval = min_interval
        self._last_profile: float | None = None  # when the last CPU profile ended
        self._last_heap: float | None = None  # when the last heap snapshot was taken
        self._running_until = 0.0  # when the profile being taken ends

    @property
    def busy(self) -> bool:
        """A CPU profile is being taken."""
        return self._busy.locked()

    def _too_soon(self, last: float | None) -> None:
        """Refuse with 429 when ``last`` was less than ``min_interval`` seconds ago."""
        if last is None:
            return
        wait = last + self.min_interval - self._clock()
        if wait > 0:
            raise web.HTTPTooManyRequests(
                text=f"profiles are at least {self.min_interval:g}s apart; retry later\n",
                headers={"Retry-After": str(math.ceil(wait))},
            )

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/debug/pprof/profile", self.profile)
        app.router.add_get("/debug/pprof/heap", self.heap)

    async def profile(self, request: web.Request) -> web.Response:
        try:
            seconds = float(request.query.get("seconds", DEFAULT_SECONDS))
        except ValueError:
            raise web.HTTPBadRequest(text="seconds must be a number\n") from None
        if not 0 < seconds <= MAX_SECONDS:
            raise web.HTTPBadRequest(text=f"seconds must be in (0, {MAX_SECONDS:g}]\n")
        fmt = request.query.get("format", "html")
        if fmt not in ("html", "speedscope", "text"):
            raise web.HTTPBadRequest(text="format must be html, speedscope or text\n")
        if self.busy:
            wait = self._running_until - self._clock() + self.min_interval
            raise web.HTTPTooManyRequests(
                text="a profile is already being taken\n",
                headers={"Retry-After": str(max(1, math.ceil(wait)))},
            )
        self._too_soon(self._last_profile)
        async with self._busy:
            self._running_until = self._clock() + seconds
            profiler = Profiler(interval=0.001, async_mode="disabled")
            profiler.start()
            try:
                await asyncio.sleep(seconds)
            finally:
                profiler.stop()
                self._last_profile = self._clock()
        if fmt == "speedscope":
            body = profiler.output(renderer=SpeedscopeRenderer())
            return web.Response(text=body, content_type="application/json")
        if fmt == "text":
            return web.Response(text=profiler.output_text(unicode=True, show_all=False))
        return web.Response(text=profiler.output_html(), content_type="text/html")

    async def heap(self, request: web.Request) -> web.Response:
        query = request.query
        if query.get("stop") == "true":
            was = tracemalloc.is_tracing()
            tracemalloc.stop()
            return web.Response(text="tracemalloc stopped\n" if was else "tracemalloc was off\n")
        try:
            limit = int(query.get("limit", "50"))
        except ValueError:
            raise web.HTTPBadRequest(text="limit must be an integer\n") from None
        self._too_soon(self._last_heap)
        self._last_heap = self._clock()
        lines: list[str] = []
        if not tracemalloc.is_tracing():
            tracemalloc.start()
            lines.append("tracemalloc started now: only allocations from here on are traced;")
            lines.append("request again later for what has accumulated (?stop=true ends it).")
            lines.append("")
        snapshot = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)]
        )
        stats = snapshot.statistics("lineno")
        total = sum(s.size for s in stats)
        traced, peak = tracemalloc.get_traced_memory()
        lines.append(f"traced: {traced / 2**20:.1f} MiB live, {peak / 2**20:.1f} MiB peak; "
                     f"top {min(limit, len(stats))} of {len(stats)} lines "
                     f"({total / 2**20:.1f} MiB)")  # fmt: skip
        lines.append(f"{'size KiB':>10} {'count':>9}  where")
        for stat in stats[:limit]:
            frame = stat.traceback[0]
            lines.append(
                f"{stat.size / 1024:10.1f} {stat.count:9d}  {frame.filename}:{frame.lineno}"
            )
        if query.get("types") == "true":
            counts = Counter(type(o).__name__ for o in gc.get_objects())
            lines.append("")
            lines.append(f"{'objects':>10}  type (gc-tracked)")
            lines.extend(f"{n:10d}  {name}" for name, n in counts.most_common(limit))
        return web.Response(text="\n".join(lines) + "\n")
