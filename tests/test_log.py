"""`karpy.log`: Karpenter-shaped JSON lines, levels, object references, redaction, stdlib."""

from __future__ import annotations

import io
import logging
import re
from datetime import timedelta

import orjson
import pytest
import structlog

from karpy.errors import UsageError
from karpy.log import (
    MASK,
    configure_logging,
    describe_error,
    get_logger,
    obj_ref,
    open_outputs,
    redact,
    redact_text,
)

# 2023-11-14T22:13:20.123456789Z
FIXED_NS = 1_700_000_000_123_456_789
FIXED_TIME = "2023-11-14T22:13:20.123Z"
PEM = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----"
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJl"


class Captured:
    def __init__(self) -> None:
        self.stream = io.StringIO()
        self.errors = io.StringIO()

    def configure(self, level: str = "info", fmt: str = "json", **kwargs: object) -> None:
        configure_logging(
            level,
            fmt,
            stream=self.stream,
            error_stream=self.errors,
            clock_ns=lambda: FIXED_NS,
            **kwargs,  # type: ignore[arg-type]
        )

    def text(self) -> str:
        return self.stream.getvalue()

    def lines(self) -> list[dict[str, object]]:
        return [orjson.loads(line) for line in self.text().splitlines()]

    def line(self) -> dict[str, object]:
        (only,) = self.lines()
        return only


@pytest.fixture
def logs():
    captured = Captured()
    captured.configure()
    yield captured
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()
    root = logging.getLogger()
    for handler in [h for h in root.handlers if type(h).__name__ == "_StdlibHandler"]:
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)


def test_line_has_karpenters_keys_first_then_fields_in_call_order(logs):
    get_logger("controller.provisioner").info("created nodeclaim", zeta=1, alpha="a")
    line = logs.line()
    assert list(line) == ["level", "time", "logger", "message", "zeta", "alpha"]
    assert line == {
        "level": "INFO",
        "time": FIXED_TIME,
        "logger": "controller.provisioner",
        "message": "created nodeclaim",
        "zeta": 1,
        "alpha": "a",
    }


def test_each_line_is_one_json_object_terminated_by_a_newline(logs):
    log = get_logger("c")
    log.info("first", text="two\nlines")
    log.info("second")
    assert logs.text().count("\n") == 2
    assert [line["message"] for line in logs.lines()] == ["first", "second"]


def test_time_is_rfc3339_utc_milliseconds_with_z(logs):
    get_logger("c").info("x")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", str(logs.line()["time"]))
    assert logs.line()["time"] == FIXED_TIME


def test_time_follows_the_clock_across_a_second_boundary():
    stream = io.StringIO()
    ticks = iter([1_700_000_000_999_000_000, 1_700_000_001_000_000_000, 1_700_000_001_500_000_000])
    configure_logging("info", stream=stream, clock_ns=lambda: next(ticks))
    try:
        for _ in range(3):
            get_logger("c").info("tick")
    finally:
        structlog.reset_defaults()
    times = [orjson.loads(line)["time"] for line in stream.getvalue().splitlines()]
    assert times == [
        "2023-11-14T22:13:20.999Z",
        "2023-11-14T22:13:21.000Z",
        "2023-11-14T22:13:21.500Z",
    ]


def test_time_comes_from_the_real_clock_by_default():
    stream = io.StringIO()
    configure_logging("info", stream=stream)
    try:
        get_logger("c").info("x")
    finally:
        structlog.reset_defaults()
    time_text = orjson.loads(stream.getvalue())["time"]
    assert re.fullmatch(r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", time_text)
    assert time_text != FIXED_TIME


@pytest.mark.parametrize(
    ("method", "level"),
    [("debug", "DEBUG"), ("info", "INFO"), ("warning", "WARN"), ("warn", "WARN"),
     ("error", "ERROR"), ("critical", "FATAL")],
)  # fmt: skip
def test_levels_are_spelled_as_zap_capitalizes_them(logs, method, level):
    logs.configure("debug")
    getattr(get_logger("c"), method)("x")
    assert logs.line()["level"] == level


@pytest.mark.parametrize(
    ("configured", "printed"),
    [("debug", ["DEBUG", "INFO", "WARN", "ERROR"]), ("info", ["INFO", "WARN", "ERROR"]),
     ("warn", ["WARN", "ERROR"]), ("error", ["ERROR"])],
)  # fmt: skip
def test_lines_below_the_configured_level_are_dropped(logs, configured, printed):
    logs.configure(configured)
    log = get_logger("c")
    log.debug("d")
    log.info("i")
    log.warning("w")
    log.error("e")
    assert [line["level"] for line in logs.lines()] == printed


def test_unknown_level_or_format_is_refused():
    with pytest.raises(ValueError, match="log level"):
        configure_logging("trace")
    with pytest.raises(ValueError, match="log format"):
        configure_logging("info", "xml")


def test_object_references_render_as_karpenter_logs_them(logs):
    get_logger("controller.provisioner").info(
        "scheduled pod",
        **obj_ref("Pod", "web-1", "default"),
        **obj_ref("NodeClaim", "default-x2k4f"),
        **obj_ref("NodePool", "default"),
    )
    line = logs.line()
    assert line["Pod"] == {"name": "web-1", "namespace": "default"}
    assert list(line["Pod"]) == ["name", "namespace"]
    assert line["NodeClaim"] == {"name": "default-x2k4f"}
    assert line["NodePool"] == {"name": "default"}


def test_bound_fields_and_sub_component_names_carry_over(logs):
    log = get_logger("controller.provisioner", controller="provisioner")
    log = log.bind(logger="controller.provisioner.batcher", **obj_ref("NodePool", "default"))
    log.info("window closed", pods=3)
    line = logs.line()
    assert line["logger"] == "controller.provisioner.batcher"
    assert line["controller"] == "provisioner"
    assert line["NodePool"] == {"name": "default"}
    assert line["pods"] == 3


def test_context_variables_are_added(logs):
    structlog.contextvars.bind_contextvars(reconcileID="r-1")
    get_logger("c").info("x")
    assert logs.line()["reconcileID"] == "r-1"


def test_a_field_named_like_a_key_field_does_not_replace_it(logs):
    get_logger("c").info("real message", level="fake", time="then")
    line = logs.line()
    assert (line["level"], line["time"], line["message"]) == ("INFO", FIXED_TIME, "real message")
    assert (line["level_"], line["time_"]) == ("fake", "then")


def test_exception_becomes_an_error_field_without_stack_at_info(logs):
    log = get_logger("c")
    try:
        raise ConnectionResetError("peer went away")
    except ConnectionResetError:
        log.exception("lost watch")
    line = logs.line()
    assert line["level"] == "ERROR"
    assert line["error"] == "ConnectionResetError: peer went away"
    assert "stacktrace" not in line


def test_exception_stack_is_added_at_debug(logs):
    logs.configure("debug")
    try:
        raise ValueError("bad")
    except ValueError as exc:
        get_logger("c").error("failed", exc_info=exc)
    line = logs.line()
    assert line["error"] == "ValueError: bad"
    assert str(line["stacktrace"]).startswith("Traceback (most recent call last):")
    assert "raise ValueError" in str(line["stacktrace"])


def test_exception_values_in_fields_render_as_their_message(logs):
    get_logger("c").warning("retrying", error=UsageError("quota exhausted"), cause=KeyError("k"))
    line = logs.line()
    assert line["error"] == "quota exhausted"
    assert line["cause"] == "KeyError: 'k'"


def test_describe_error_of_an_exception_without_text_is_its_type():
    assert describe_error(TimeoutError()) == "TimeoutError"
    assert describe_error(UsageError()) == "UsageError"


def test_caller_is_added_only_at_debug(logs):
    get_logger("c").info("quiet")
    assert "caller" not in logs.line()
    logs.stream.truncate(0)
    logs.stream.seek(0)
    logs.configure("debug")
    get_logger("c").info("loud")
    line = logs.line()
    assert re.fullmatch(r"tests/test_log\.py:\d+", str(line["caller"]))
    assert list(line)[:5] == ["level", "time", "logger", "caller", "message"]


def test_values_json_cannot_hold_are_rendered_as_text(logs):
    class Opaque:
        def __str__(self) -> str:
            return "opaque Bearer abcdef123"

    get_logger("c").info("x", zones={"b", "a"}, wait=timedelta(seconds=90), thing=Opaque())
    line = logs.line()
    assert line["zones"] == ["a", "b"]
    assert line["wait"] == "1m30s"
    assert line["thing"] == f"opaque Bearer {MASK}"


def test_a_value_beyond_json_numbers_keeps_the_line(logs):
    get_logger("c").info("x", huge=2**70)
    line = logs.line()
    assert line["message"] == "x"
    assert line["huge"] == str(2**70)
    assert "logError" in line


# --- redaction ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    ["userData", "user_data", "UserData", "token", "bearerToken", "password", "secret",
     "secretAccessKey", "caBundle", "ca_bundle", "Authorization", "privateKey"],
)  # fmt: skip
def test_sensitive_fields_are_masked(logs, key):
    get_logger("c").info("x", **{key: "s3cr3t-value"})
    assert logs.line()[key] == MASK
    assert "s3cr3t-value" not in logs.text()


def test_sensitive_fields_are_masked_inside_nested_values(logs):
    spec = {"launchTemplate": {"userData": "#!/bin/bash\necho hi", "amiID": "ami-1"}}
    get_logger("c").info("x", spec=spec, items=[{"token": "t"}])
    line = logs.line()
    assert line["spec"] == {"launchTemplate": {"userData": MASK, "amiID": "ami-1"}}
    assert line["items"] == [{"token": MASK}]


def test_an_object_reference_to_a_secret_is_not_masked(logs):
    get_logger("c").info("x", **obj_ref("Secret", "registry", "default"))
    assert logs.line()["Secret"] == {"name": "registry", "namespace": "default"}


def test_secret_looking_text_is_masked_anywhere(logs):
    get_logger("c").info(
        f"request had Authorization: Bearer abc.def-ghi and {JWT}",
        body=f"ca:\n{PEM}\nend",
        encoded=f"data LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t{'A' * 20}== tail",
    )
    line = logs.line()
    assert line["message"] == f"request had Authorization: Bearer {MASK} and {MASK}"
    assert line["body"] == f"ca:\n{MASK}\nend"
    assert line["encoded"] == f"data {MASK} tail"


def test_redact_text_masks_an_unterminated_pem_block():
    assert redact_text("key -----BEGIN RSA PRIVATE KEY-----\nMIIE") == f"key {MASK}"


def test_redact_leaves_ordinary_values_alone():
    value = {"name": "default", "count": 3, "zones": ["a", "b"], "tokenless": None}
    assert redact({"name": "default", "count": 3, "zones": ("a", "b")}) == {
        "name": "default",
        "count": 3,
        "zones": ["a", "b"],
    }
    assert redact(value)["tokenless"] == MASK  # a name containing "token" is masked


# --- standard-library logging ---------------------------------------------------------------


def test_stdlib_warnings_are_rendered_like_karpy_lines(logs):
    logging.getLogger("botocore.credentials").warning("found %d profiles", 2)
    assert logs.line() == {
        "level": "WARN",
        "time": FIXED_TIME,
        "logger": "botocore.credentials",
        "message": "found 2 profiles",
    }


def test_stdlib_info_is_dropped_by_default_even_at_debug(logs):
    logs.configure("debug")
    logging.getLogger("aiohttp.access").info("GET /healthz")
    assert logs.text() == ""


def test_stdlib_threshold_can_be_lowered(logs):
    logs.configure("info", stdlib_level="info")
    logging.getLogger("aiohttp.access").info("GET /healthz")
    assert logs.line()["message"] == "GET /healthz"


def test_stdlib_records_respect_karpys_level(logs):
    logs.configure("error")
    logging.getLogger("kubernetes_asyncio").warning("slow")
    logging.getLogger("kubernetes_asyncio").error("down")
    assert [line["message"] for line in logs.lines()] == ["down"]


def test_stdlib_exceptions_and_secrets_are_handled_the_same_way(logs):
    try:
        raise OSError("connection refused")
    except OSError:
        logging.getLogger("aiohttp.client").exception("Authorization: Bearer zzz")
    line = logs.line()
    assert (line["level"], line["error"]) == ("ERROR", "OSError: connection refused")
    assert line["message"] == f"Authorization: Bearer {MASK}"


def test_reconfiguring_replaces_the_stdlib_handler(logs):
    logs.configure()
    logs.configure()
    logging.getLogger("x").warning("once")
    assert len(logs.lines()) == 1


# --- console mode and output ----------------------------------------------------------------


def test_console_format_is_for_people(logs):
    logs.configure("debug", "console")
    log = get_logger("controller.provisioner")
    log.info("created nodeclaim", **obj_ref("NodeClaim", "default-x2k4f"), password="p")
    try:
        raise RuntimeError("kaput")
    except RuntimeError:
        log.exception("failed")
    first, *rest = logs.text().splitlines()
    assert not first.startswith("{")
    assert first.startswith(FIXED_TIME)
    assert "INFO" in first
    assert "created nodeclaim" in first
    assert "[controller.provisioner]" in first
    assert "NodeClaim={'name': 'default-x2k4f'}" in first
    assert "password=[REDACTED]" in first
    assert "error='RuntimeError: kaput'" in "\n".join(rest)
    assert "Traceback (most recent call last):" in rest  # the stack follows on its own lines


def test_a_failed_write_is_reported_on_the_error_stream_not_raised(logs):
    class Broken(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError("disk full")

    configure_logging("info", stream=Broken(), error_stream=logs.errors)
    get_logger("c").info("x")
    assert logs.errors.getvalue() == "karpy: could not write a log line: disk full\n"


def test_outputs_open_stdout_and_append_to_files(tmp_path, capsys):
    path = tmp_path / "karpy.log"
    path.write_text("old\n")
    stream = open_outputs(["stdout", str(path)])
    stream.write("new\n")
    stream.flush()
    assert capsys.readouterr().out == "new\n"
    assert path.read_text() == "old\nnew\n"


def test_an_output_that_cannot_be_opened_raises(tmp_path):
    with pytest.raises(OSError):
        open_outputs([str(tmp_path / "missing" / "karpy.log")])
