"""Reading simulate's inputs: files, directories and stdin; YAML streams and ``List`` kinds.

Every object remembers the file it came from, so an unusable object is reported as
``pods.yaml: Pod default/web-1: ...``. Kinds the simulation does not use are returned
separately so the CLI can warn about them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import orjson
import yaml

from karpy.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

__all__ = ["Document", "load_catalog", "load_objects", "load_scheduler_config"]

SUFFIXES = (".yaml", ".yml", ".json")
Document = tuple[str, dict[str, Any]]  # (source, object)


def _files(path: str) -> list[tuple[str, Path | None]]:
    if path == "-":
        return [("<stdin>", None)]
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.is_file() and f.suffix in SUFFIXES)
        return [(str(f), f) for f in files]
    if not p.exists():
        raise UsageError(f"{path}: no such file or directory")
    return [(str(p), p)]


def _read(source: str, file: Path) -> str:
    """The text of ``file``; one-line `UsageError` when it cannot be read as UTF-8."""
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{source}: not UTF-8 text (a binary file?)") from None
    except OSError as exc:
        raise UsageError(f"{source}: {exc.strerror or exc}") from None


def _parse_stream(source: str, text: str) -> Iterator[Any]:
    try:
        if source.endswith(".json"):
            yield _json(text)
            return
        yield from yaml.safe_load_all(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f" (line {line + 1})" if line is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UsageError(f"{source}: does not parse{where}: {problem}") from exc


def _json(text: str) -> Any:
    """``text`` parsed as JSON: by orjson, which reads a 40,000-pod snapshot (140 MB) about
    half again as fast as the standard library; what orjson refuses (NaN, integers past 64
    bits) goes to the standard library, which decides, and words any error, as before."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _flatten(source: str, doc: Any) -> Iterator[dict[str, Any]]:
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise UsageError(f"{source}: expected a Kubernetes object, got {type(doc).__name__}")
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            yield from _flatten(source, item)
        return
    if not isinstance(kind, str) or not kind:
        raise UsageError(f"{source}: object without a kind")
    yield doc


def load_objects(paths: Sequence[str], stdin: TextIO | None = None) -> list[Document]:
    """Every object in ``paths`` (files, directories, ``-`` for stdin) with its source."""
    out: list[Document] = []
    for path in paths:
        files = _files(path)
        if not files:
            raise UsageError(f"{path}: a directory with no {', '.join(sorted(SUFFIXES))} files")
        for source, file in files:
            text = (stdin or sys.stdin).read() if file is None else _read(source, file)
            docs = [doc for doc in _parse_stream(source, text) if doc is not None]
            if not docs:  # an empty List is fine (nothing of a kind); an empty file is not
                raise UsageError(f"{source}: empty: no YAML or JSON document in it")
            out.extend((source, obj) for doc in docs for obj in _flatten(source, doc))
    return out


def load_catalog(path: str) -> dict[str, Any]:
    return _load_mapping(path, "the instance-type catalog")


def load_scheduler_config(path: str) -> dict[str, Any]:
    return _load_mapping(path, "the scheduler config")


def _load_mapping(path: str, what: str) -> dict[str, Any]:
    if path != "-" and not Path(path).exists():
        raise UsageError(f"{path}: {what}: no such file or directory")
    files = _files(path)
    if len(files) != 1 or Path(path).is_dir():
        raise UsageError(f"{path}: {what} must be one file, not a directory")
    source, file = files[0]
    text = sys.stdin.read() if file is None else _read(source, file)
    docs = [d for d in _parse_stream(source, text) if d is not None]
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise UsageError(f"{source}: {what} must be one mapping")
    data: dict[str, Any] = docs[0]
    return data
