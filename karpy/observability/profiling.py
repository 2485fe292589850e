"""On-demand profiles of the running controller (``ENABLE_PROFILING=true``).

``/debug/pprof/profile?seconds=N`` samples the event-loop thread for N seconds with
pyinstrument and answers an HTML flame view (``&format=speedscope`` for speedscope JSON,
``&format=text`` for a call tree). Only one profile runs at a time (409 otherwise). The
sampler's cost is paid only while a profile runs.

``/debug/pprof/heap`` answers the top allocations by source line from `tracemalloc`. The
first request starts tracing (Python then records a traceback for every allocation: about
a third more memory for the traced objects and allocations several times slower) and
answers what was allocated since; later requests show what is live and was allocated
since tracing began; ``?stop=true`` stops tracing and frees its memory. ``?types=true``
adds live object counts by type (a walk over every object the GC tracks).
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from collections import Counter
from typing import Final

from aiohttp import web
from pyinstrument import Profiler
from pyinstrument.renderers import SpeedscopeRenderer

__all__ = ["Profiling"]

MAX_SECONDS: Final = 300.0
DEFAULT_SECONDS: Final = 30.0


class Profiling:
    def __init__(self) -> None:
        self._busy = asyncio.Lock()

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
        if self._busy.locked():
            raise web.HTTPConflict(text="a profile is already being taken\n")
        async with self._busy:
            profiler = Profiler(interval=0.001, async_mode="disabled")
            profiler.start()
            try:
                await asyncio.sleep(seconds)
            finally:
                profiler.stop()
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
