"""`watch_lines`: a watch stream's lines, split by karpy from chunks of any size.

A watch answers one JSON document per line, and a line is a whole object: a Pod with a
large annotation or a ConfigMap-sized status runs to megabytes. aiohttp's line reader
either caps a line at its read buffer (``ValueError: Line is too long`` / ``Chunk too
big``, 64 KiB by default in older releases) or grows without bound, depending on the
version and the session's ``read_bufsize``; neither is what an informer wants. So lines are
split here from whatever chunks arrive, with one explicit cap, ``limit`` bytes: a longer
line raises `LineTooLong` and the informer relists (a LIST reads whole bodies) instead of
re-watching the same event for ever.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import AsyncIterable, AsyncIterator

__all__ = ["LineTooLong", "watch_lines"]


class LineTooLong(Exception):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"watch line of more than {size} bytes (limit {limit})")
        self.size = size
        self.limit = limit


async def watch_lines(chunks: AsyncIterable[bytes], limit: int) -> AsyncIterator[bytes]:
    """The non-empty lines of ``chunks``, without their newlines; the last line may end
    without one."""
    partial: list[bytes] = []  # the start of a line that has not ended yet
    partial_size = 0
    async for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if partial:
                partial.append(chunk[start:end])
                line = b"".join(partial)
                partial, partial_size = [], 0
            else:
                line = chunk[start:end]
            if line.strip():
                yield line
            start = end + 1
        if start < len(chunk):
            partial.append(chunk[start:])
            partial_size += len(chunk) - start
            if partial_size > limit:
                raise LineTooLong(partial_size, limit)
    tail = b"".join(partial)
    if tail.strip():
        yield tail
