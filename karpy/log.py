"""Structured logs shaped like Karpenter's: one JSON object per line.

Operators of Karpenter grep, parse and alert on its zap JSON lines, so karpy writes the
same shape with structlog and orjson::

    {"level":"INFO","time":"2024-05-01T10:00:00.123Z","logger":"controller.provisioner",
     "message":"created nodeclaim","NodePool":{"name":"default"},"NodeClaim":{"name":"x"}}

`level` is upper-case as zap's capital-level encoder writes it (DEBUG, INFO, WARN, ERROR;
FATAL for `critical`), `time` is RFC 3339 in UTC with milliseconds and a ``Z``, `logger`
names the component, `message` is a short verb phrase, and the facts follow as fields in
the order they were given. Kubernetes objects are referenced as Karpenter's controllers
reference them, ``{"Kind": {"name": ..., "namespace": ...}}``; build them with `obj_ref`.
At debug level a `caller` field (``package/file.py:line``) follows `logger`, as zap adds
it in development mode. An exception becomes an `error` field holding its message and, at
debug level only, a `stacktrace` field.

Logs must never leak credentials or user data, so every line passes through `redact`:
fields whose names contain userData, token, password, secret, caBundle, authorization,
privateKey or credential are masked, and any string holding a PEM block (or its base64
form), a bearer token or a JWT has that part masked, wherever it appears.

Libraries that use the standard `logging` module (aiohttp, botocore, kubernetes_asyncio)
go through the same processors and renderer, at WARN and above unless told otherwise, so
a process writes a single stream of uniform lines. `configure_logging` may be called
again (tests do); it replaces the previous configuration.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
import threading
import time
import traceback
from datetime import timedelta
from typing import IO, TYPE_CHECKING, Any, Protocol, cast

import orjson
import structlog
from structlog.processors import CallsiteParameter, CallsiteParameterAdder

from karpy.durations import format_duration, from_timedelta
from karpy.errors import KarpyError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from structlog.typing import EventDict, FilteringBoundLogger, Processor, WrappedLogger

__all__ = [
    "LEVELS",
    "configure_logging",
    "describe_error",
    "get_logger",
    "obj_ref",
    "open_outputs",
    "redact",
    "redact_text",
]

LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}
FORMATS = ("json", "console")

# structlog method name -> the level zap would print.
_LEVEL_OF_METHOD = {
    "debug": "DEBUG",
    "info": "INFO",
    "msg": "INFO",
    "warning": "WARN",
    "warn": "WARN",
    "error": "ERROR",
    "exception": "ERROR",
    "critical": "FATAL",
    "fatal": "FATAL",
}
MASK = "[REDACTED]"


def get_logger(component: str, **fields: Any) -> FilteringBoundLogger:
    """A logger whose lines carry ``logger=component`` (``"controller.provisioner"``).
    Safe to call at import time: it takes the configuration current when it first logs."""
    logger: FilteringBoundLogger = structlog.get_logger(component, **fields)
    return logger


def obj_ref(kind: str, name: str, namespace: str | None = None) -> dict[str, dict[str, str]]:
    """A field naming a Kubernetes object as Karpenter logs it; spread it into a call:
    ``log.info("launched nodeclaim", **obj_ref("NodeClaim", name))`` gives
    ``"NodeClaim":{"name":...}``; namespaced kinds add ``"namespace"``."""
    ref = {"name": name}
    if namespace is not None:
        ref["namespace"] = namespace
    return {kind: ref}


def describe_error(exc: BaseException) -> str:
    """An exception's text for the `error` field. karpy's own errors are written to be
    read as they are; others get their type's name first, which often carries the cause
    (``ClientConnectorError: Cannot connect to host ...``)."""
    text = str(exc)
    if isinstance(exc, KarpyError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# --- redaction ----------------------------------------------------------------------------

_SENSITIVE_WORDS = (
    "userdata",
    "token",
    "password",
    "passwd",
    "secret",
    "cabundle",
    "authorization",
    "privatekey",
    "credential",
)
_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]+-----.*?(?:-----END [A-Z0-9 ]+-----|\Z)", re.DOTALL)
_PEM_BASE64 = re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]*")  # base64 of "-----BEGIN"
_BEARER = re.compile(r"\b(bearer)\s+[A-Za-z0-9\-._~+/]+=*", re.IGNORECASE)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]*)?")


def _is_sensitive_key(key: str) -> bool:
    folded = key.lower().replace("_", "").replace("-", "")
    return any(word in folded for word in _SENSITIVE_WORDS)


def _is_object_ref(value: Any) -> bool:
    # {"Secret": {"name": "x"}} names an object; it holds nothing secret itself.
    return isinstance(value, dict) and 0 < len(value) <= 2 and value.keys() <= {"name", "namespace"}


def redact_text(text: str) -> str:
    """``text`` with PEM blocks, bearer tokens and JWTs masked."""
    if "-----BEGIN" in text:
        text = _PEM.sub(MASK, text)
    if "LS0tLS1CRUdJTi" in text:
        text = _PEM_BASE64.sub(MASK, text)
    if "earer" in text or "EARER" in text:
        text = _BEARER.sub(lambda m: f"{m[1]} {MASK}", text)
    if "eyJ" in text:
        text = _JWT.sub(MASK, text)
    return text


def redact(value: Any) -> Any:
    """``value`` with sensitive fields masked, recursively through dicts, lists and tuples."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {
            key: MASK
            if isinstance(key, str) and _is_sensitive_key(key) and not _is_object_ref(item)
            else redact(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    return value


# --- processors ---------------------------------------------------------------------------


def _add_level_and_logger(logger: WrappedLogger, method_name: str, event: EventDict) -> EventDict:
    # Key fields go under private names until `_order`, so a field a caller happens to
    # name "level" or "time" can neither replace them nor be lost.
    event.setdefault("_level", _LEVEL_OF_METHOD.get(method_name, method_name.upper()))
    # A bound `logger=` field (a sub-component) wins over the name the logger was made with.
    event.setdefault("logger", getattr(logger, "name", None) or "karpy")
    return event


def _timestamper(clock_ns: Callable[[], int]) -> Processor:
    # The formatted whole second is reused while it lasts; one tuple, read and replaced
    # whole, so a thread never pairs one second with another's text.
    last = [(-1, "")]

    def add_time(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
        seconds, nanos = divmod(clock_ns(), 1_000_000_000)
        second = last[0]
        if second[0] != seconds:
            second = last[0] = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)))
        event["_time"] = f"{second[1]}.{nanos // 1_000_000:03d}Z"
        return event

    return add_time


def _add_caller(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    path, line = event.pop("pathname", None), event.pop("lineno", None)
    if path:
        event["_caller"] = "/".join(path.replace("\\", "/").split("/")[-2:]) + f":{line}"
    return event


def _exceptions(with_stack: bool) -> Processor:
    def render_exceptions(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
        exc_info = event.pop("exc_info", None)
        if exc_info is True:
            exc_info = sys.exc_info()
        exc = exc_info[1] if isinstance(exc_info, tuple) else exc_info
        if isinstance(exc, BaseException):
            event.setdefault("error", exc)
            if with_stack:
                event["stacktrace"] = "".join(traceback.format_exception(exc)).rstrip()
        for key, value in event.items():
            if isinstance(value, BaseException):
                event[key] = describe_error(value)
        return event

    return render_exceptions


def _redact_fields(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    redacted: EventDict = redact(event)
    return redacted


def _order(_: WrappedLogger, __: str, event: EventDict) -> EventDict:
    event.pop("_record", None)
    event.pop("_from_structlog", None)
    ordered = {"level": event.pop("_level"), "time": event.pop("_time")}
    ordered["logger"] = event.pop("logger")
    if "_caller" in event:
        ordered["caller"] = event.pop("_caller")
    ordered["message"] = event.pop("event", "")
    for key, value in event.items():
        ordered[f"{key}_" if key in ordered else key] = value
    return ordered


def _json_default(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    if isinstance(value, timedelta):
        return format_duration(from_timedelta(value))
    return redact_text(str(value))


def _render_json(_: WrappedLogger, __: str, event: EventDict) -> str:
    try:
        return orjson.dumps(event, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError as exc:  # e.g. an integer beyond 64 bits: keep the line, as text
        safe = {str(k): v if isinstance(v, str) else redact_text(repr(v)) for k, v in event.items()}
        safe["logError"] = f"field not renderable as JSON: {exc}"
        return orjson.dumps(safe).decode()


def _console_renderer(colors: bool) -> Processor:
    styles = structlog.dev.ConsoleRenderer.get_default_level_styles(colors)
    upper = {name.upper(): style for name, style in styles.items()}
    upper.update(WARN=styles["warning"], FATAL=styles["critical"])
    console = structlog.dev.ConsoleRenderer(
        colors=colors,
        event_key="message",
        timestamp_key="time",
        sort_keys=False,
        level_styles=upper,
    )

    def render(logger: WrappedLogger, name: str, event: EventDict) -> str:
        stack = event.pop("stacktrace", None)
        line = str(console(logger, name, event))
        return f"{line}\n{stack}" if stack else line

    return render


# --- output -------------------------------------------------------------------------------


class _Sink:
    """Writes whole lines under a lock; a failed write is reported on the error stream
    (LOG_ERROR_OUTPUT_PATHS) rather than raised into the code that was logging."""

    def __init__(self, stream: IO[str], error_stream: IO[str]) -> None:
        self.stream = stream
        self.error_stream = error_stream
        self.lock = threading.Lock()

    def write(self, line: str) -> None:
        try:
            with self.lock:
                self.stream.write(line + "\n")
                self.stream.flush()
        except (OSError, ValueError) as exc:
            with contextlib.suppress(OSError, ValueError):  # nowhere left to report to
                self.error_stream.write(f"karpy: could not write a log line: {exc}\n")
                self.error_stream.flush()


class _LineLogger:
    """The object structlog hands rendered lines to, whatever the method name."""

    def __init__(self, sink: _Sink, name: str | None) -> None:
        self._sink = sink
        self.name = name

    def msg(self, line: str) -> None:
        self._sink.write(line)

    debug = info = warning = warn = error = critical = fatal = exception = log = msg


class _Renderer(Protocol):
    def __call__(self, method_name: str, event: EventDict) -> str: ...


class _StdlibHandler(logging.Handler):
    """Routes standard-library records through karpy's processors and sink."""

    def __init__(self, render: _Renderer, sink: _Sink, level: int) -> None:
        super().__init__(level)
        self._render = render
        self._sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        try:
            event: EventDict = {
                "event": record.getMessage(),
                "logger": record.name,
                "_level": _stdlib_level_name(record.levelno),
                "_record": record,
                "_from_structlog": False,
            }
            if record.exc_info and record.exc_info[1] is not None:
                event["exc_info"] = record.exc_info[1]
            self._sink.write(self._render(record.levelname.lower(), event))
        except Exception:
            self.handleError(record)


def _stdlib_level_name(levelno: int) -> str:
    for threshold, name in ((50, "FATAL"), (40, "ERROR"), (30, "WARN"), (20, "INFO")):
        if levelno >= threshold:
            return name
    return "DEBUG"


class _Tee:
    """A text stream writing to several streams (LOG_OUTPUT_PATHS with several entries)."""

    def __init__(self, streams: Sequence[IO[str]]) -> None:
        self.streams = list(streams)

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


def open_outputs(paths: Sequence[str]) -> IO[str]:
    """One stream writing to every entry of ``paths``: ``stdout``, ``stderr`` or a file,
    opened for appending. Raises OSError for a file that cannot be opened."""
    streams: list[IO[str]] = []
    for path in paths:
        if path == "stdout":
            streams.append(sys.stdout)
        elif path == "stderr":
            streams.append(sys.stderr)
        else:
            streams.append(open(path, "a", encoding="utf-8"))  # noqa: SIM115 - process-long
    return streams[0] if len(streams) == 1 else cast("IO[str]", _Tee(streams))


# --- configuration ------------------------------------------------------------------------


def configure_logging(
    level: str = "info",
    fmt: str = "json",
    *,
    stream: IO[str] | None = None,
    error_stream: IO[str] | None = None,
    stdlib_level: str = "warn",
    clock_ns: Callable[[], int] = time.time_ns,
    cache_loggers: bool = False,
) -> None:
    """Send karpy's and the standard library's logs to ``stream`` (stdout by default, as
    Karpenter does) as ``fmt`` (json or console), dropping lines below ``level``.

    Standard-library records need ``stdlib_level`` as well as ``level``. Pass
    ``cache_loggers=True`` in a process that configures logging once (the controller): it
    makes logging faster, but loggers already used keep their configuration.
    """
    if level not in LEVELS or stdlib_level not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}")
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}")
    sink = _Sink(stream or sys.stdout, error_stream or sys.stderr)
    debug = level == "debug"
    processors: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        _add_level_and_logger,
        _timestamper(clock_ns),
    ]
    if debug:
        parameters = [CallsiteParameter.PATHNAME, CallsiteParameter.LINENO]
        processors += [CallsiteParameterAdder(parameters, additional_ignores=[__name__])]
        processors.append(_add_caller)
    processors += [_exceptions(with_stack=debug), _redact_fields, _order]
    colors = fmt == "console" and bool(getattr(sink.stream, "isatty", lambda: False)())
    processors.append(_render_json if fmt == "json" else _console_renderer(colors))

    structlog.reset_defaults()
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[level]),
        logger_factory=lambda name=None, *_: _LineLogger(sink, name),
        cache_logger_on_first_use=cache_loggers,
    )

    def render(method_name: str, event: EventDict) -> str:
        for processor in processors:
            event = processor(None, method_name, event)  # type: ignore[assignment]
        return event  # type: ignore[return-value]  # the last processor renders a str

    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _StdlibHandler)]:
        root.removeHandler(handler)
    root.addHandler(_StdlibHandler(render, sink, LEVELS[level]))
    root.setLevel(max(LEVELS[level], LEVELS[stdlib_level]))
