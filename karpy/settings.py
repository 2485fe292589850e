"""Every setting of `karpy controller`, read once at start-up into a frozen `Settings`.

Karpenter is configured with environment variables (its Helm chart writes them) and, less
often, with flags; karpy reads the same names, flags and defaults so a deployment's
configuration carries over. Each setting is one row of `OPTIONS`: env var, flag, default
as text, and a parser. A setting's value is the flag if given, else the env var if set,
else the default, and all three go through the same parser, so a default can never be
something the parser would reject.

Karpenter falls back to the default when an env var does not parse and ignores unknown
feature gates; karpy refuses to start instead, since a typo in a gate or a duration should
not run a controller configured otherwise than its operator asked. Every problem found is
reported, all on one line (`; `-separated, in table order), as a `SettingsError`, which
the CLI prints after ``karpy controller:`` before exiting with status 2.

Durations are integer nanoseconds (`karpy.durations`): convert with `to_timedelta` or
divide by `durations.SECOND` before handing one to asyncio.

`Settings.from_env_and_args` is pure: it reads only the mapping it is given. The one fact
it needs from the pod's file system, its namespace (the default leader-election lease
namespace), is read by the caller with `read_service_account_namespace` and passed in.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import re
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

import attrs

from karpy.durations import MINUTE, SECOND, DurationError, format_duration, parse_duration
from karpy.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
FALLBACK_NAMESPACE = "kube-system"
LOG_LEVELS = ("debug", "info", "warn", "error")
LOG_FORMATS = ("json", "console")


class SettingsError(UsageError):
    """One or more settings are unusable; `errors` holds one sentence per problem."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("; ".join(errors))


class _Invalid(ValueError):
    """A value breaks its setting's rule; `rule` says how, in a few words."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


# --- value parsers: each takes the text and returns the value or raises _Invalid ----------

_INT = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")
_INT64 = 2**63
_GO_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_SQS_QUEUE = re.compile(r"[A-Za-z0-9_-]{1,80}\Z|[A-Za-z0-9_-]{1,75}\.fifo\Z")


def _bool(text: str) -> bool:
    # Karpenter's boolean flags take exactly these two words.
    if text not in ("true", "false"):
        raise _Invalid("must be true or false")
    return text == "true"


def _int(text: str, minimum: int = -_INT64, rule: str = "must be an integer") -> int:
    if not _INT.match(text) or not -_INT64 <= int(text) < _INT64 or int(text) < minimum:
        raise _Invalid(rule)
    return int(text)


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in allowed:
            raise _Invalid("must be one of " + ", ".join(a for a in allowed if a))
        return text

    return parse


def _duration(minimum: int, rule: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            nanos = parse_duration(text)
        except DurationError:
            raise _Invalid("must be a duration such as 10s, 1m30s or 500ms") from None
        if nanos < minimum:
            raise _Invalid(rule)
        return nanos

    return parse


def _port(text: str) -> int:
    value = _int(text, rule="must be a port number in 1..65535")
    if not 1 <= value <= 65535:
        raise _Invalid("must be a port number in 1..65535")
    return value


def _non_negative(text: str) -> int:
    return _int(text, minimum=0, rule="must be an integer >= 0")


def _positive(text: str) -> int:
    return _int(text, minimum=1, rule="must be an integer >= 1")


def _cpu_requests(text: str) -> int:
    value = _int(text, rule="must be an integer number of millicores")
    return value if value > 0 else 1000  # as Karpenter: no request counts as one core


def _qps(text: str) -> int:
    if _int(text) == 0:
        raise _Invalid("must not be 0 (a positive rate, or negative for no client-side limit)")
    return int(text)


def _percent(text: str) -> float:
    if not _FLOAT.match(text) or not 0 <= float(text) < 1:
        raise _Invalid("must be a fraction in [0, 1), e.g. 0.075")
    return float(text)


def _log_level(text: str) -> str:
    return _choice(*LOG_LEVELS)(text) if text else "info"  # Karpenter takes empty as info


def _paths(text: str) -> tuple[str, ...]:
    paths = tuple(p.strip() for p in text.split(",") if p.strip())
    if not paths:
        raise _Invalid("must name at least one of stdout, stderr or a file path")
    return paths


def _cluster_name(text: str) -> str:
    # Presence is checked by `_cross_checks`, which knows whether the value was ever set.
    if text != text.strip():
        raise _Invalid("must not have leading or trailing spaces")
    return text


def _cluster_endpoint(text: str) -> str:
    if not text:
        return ""
    try:
        parts = urlsplit(text)
        _ = parts.port  # raises ValueError for a port that is not a number
    except ValueError:
        parts = None
    if parts is None or not parts.scheme or not parts.hostname or re.search(r"\s", text):
        raise _Invalid("must be an absolute URL with a host, e.g. https://api.example.com")
    return text


def _ca_bundle(text: str) -> str:
    if not text:
        return ""
    try:
        decoded = base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise _Invalid("must be base64-encoded PEM, as EKS DescribeCluster returns it") from None
    if b"-----BEGIN CERTIFICATE-----" not in decoded:
        raise _Invalid("must decode to PEM certificates (-----BEGIN CERTIFICATE-----)")
    return text


def _queue_name(text: str) -> str:
    if text and not _SQS_QUEUE.match(text):
        raise _Invalid(
            "must be an SQS queue name (letters, digits, - and _; at most 80), not a URL"
        )
    return text


def _lease_name(text: str) -> str:
    if len(text) > 253 or not _DNS_SUBDOMAIN.match(text):
        raise _Invalid("must be a DNS subdomain name (lower-case letters, digits, - and .)")
    return text


def _namespace(text: str) -> str:
    if text and not _DNS_LABEL.match(text):
        raise _Invalid("must be a namespace name (lower-case letters, digits and -)")
    return text


# --- feature gates ------------------------------------------------------------------------


@attrs.frozen(slots=True)
class FeatureGates:
    """Karpenter core's gates (`FEATURE_GATES`), with the defaults Karpenter ships."""

    node_repair: bool = False
    reserved_capacity: bool = True
    spot_to_spot_consolidation: bool = False
    node_overlay: bool = False
    static_capacity: bool = False
    capacity_buffer: bool = False

    NAMES: ClassVar[dict[str, str]] = {
        "NodeRepair": "node_repair",
        "ReservedCapacity": "reserved_capacity",
        "SpotToSpotConsolidation": "spot_to_spot_consolidation",
        "NodeOverlay": "node_overlay",
        "StaticCapacity": "static_capacity",
        "CapacityBuffer": "capacity_buffer",
    }

    def as_dict(self) -> dict[str, bool]:
        return {name: getattr(self, field) for name, field in self.NAMES.items()}


@attrs.frozen(slots=True)
class AWSFeatureGates:
    """The AWS provider's gates (`AWS_FEATURE_GATES`)."""

    node_class_cel: bool = False

    NAMES: ClassVar[dict[str, str]] = {"NodeClassCEL": "node_class_cel"}

    def as_dict(self) -> dict[str, bool]:
        return {name: getattr(self, field) for name, field in self.NAMES.items()}


def _gates(cls: type[FeatureGates] | type[AWSFeatureGates]) -> Callable[[str], Any]:
    """A parser of ``Name=bool,...`` lists as Kubernetes' component-base reads them: blank
    items skipped, spaces trimmed, Go's ParseBool spellings, the last mention winning,
    unnamed gates keeping their default. Unlike Karpenter, unknown names are errors."""

    def parse(text: str) -> FeatureGates | AWSFeatureGates:
        values: dict[str, bool] = {}
        for item in filter(str.strip, text.split(",")):
            name, equals, raw = (part.strip() for part in item.partition("="))
            if not equals:
                raise _Invalid(f"{json.dumps(item.strip())} is not Name=true|false")
            if name not in cls.NAMES:
                raise _Invalid(f"unknown feature gate {name} (known: {', '.join(cls.NAMES)})")
            if raw not in _GO_BOOLS:
                raise _Invalid(f"feature gate {name} must be true or false, not {json.dumps(raw)}")
            values[cls.NAMES[name]] = _GO_BOOLS[raw]
        return cls(**values)

    return parse


# --- the table ----------------------------------------------------------------------------


@attrs.frozen(slots=True)
class Option:
    """One setting: where its text comes from, its default, how the text becomes a value."""

    field: str
    default: str
    parse: Callable[[str], Any]
    help: str
    group: str
    metavar: str = "VALUE"
    shown_default: str | None = None  # for --help, when the default is worked out at start
    echo_value: bool = True  # False: an error gives the value's length, not the value

    @property
    def env(self) -> str:
        return self.field.upper()

    @property
    def flag(self) -> str:
        return "--" + self.field.replace("_", "-")

    @property
    def label(self) -> str:
        return f"{self.env} ({self.flag})"


_DURATION, _BOOL = "DURATION", "true|false"
# fmt: off
OPTIONS: tuple[Option, ...] = (
    Option("cluster_name", "", _cluster_name, "Name of the cluster, for discovery and tags.",
           "cluster", "NAME", shown_default='"" (required)'),
    Option("cluster_endpoint", "", _cluster_endpoint, "API server URL that nodes join; found "
           "with EKS DescribeCluster when empty.", "cluster", "URL"),
    Option("cluster_ca_bundle", "", _ca_bundle, "Base64 PEM CA bundle that nodes trust; "
           "karpy's own when empty.", "cluster", "BASE64", echo_value=False),
    Option("kubeconfig", "", lambda text: text or None, "karpy: kubeconfig file for the API "
           "server; unset means the in-cluster service account.", "cluster", "PATH"),
    Option("eks_control_plane", "false", _bool, "Discover cluster details with EKS "
           "DescribeCluster.", "cluster", _BOOL),
    Option("isolated_vpc", "false", _bool, "No public AWS endpoints: static prices, no "
           "instance-profile garbage collection.", "cluster", _BOOL),
    Option("batch_max_duration", "10s", _duration(0, "must not be negative"), "Longest a "
           "provisioning batch window stays open.", "provisioning", _DURATION),
    Option("batch_idle_duration", "1s", _duration(0, "must not be negative"), "A batch window "
           "closes after this long without a new pending pod.", "provisioning", _DURATION),
    Option("scheduling_timeout", "30s", _duration(1, "must be greater than 0s"), "karpy: the "
           "time bound on one scheduling round.", "provisioning", _DURATION),
    Option("preference_policy", "Respect", _choice("Respect", "Ignore"), "Respect or Ignore "
           "preferred affinities and ScheduleAnyway spreads.", "provisioning", "POLICY"),
    Option("min_values_policy", "Strict", _choice("Strict", "BestEffort"), "Strict, or "
           "BestEffort to relax minValues that cannot be met.", "provisioning", "POLICY"),
    Option("ignore_dra_requests", "true", _bool, "Leave pods with DRA resource claims "
           "unscheduled by karpy.", "provisioning", _BOOL),
    Option("feature_gates", "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation="
           "false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false",
           _gates(FeatureGates), "Core gates, Name=true|false,...; unknown names are "
           "rejected.", "provisioning", "GATES"),
    Option("aws_feature_gates", "NodeClassCEL=false", _gates(AWSFeatureGates), "AWS gates, "
           "Name=true|false,...", "provisioning", "GATES"),
    Option("vm_memory_overhead_percent", "0.075", _percent, "Fraction of memory taken as "
           "hypervisor overhead when none is measured.", "AWS", "FRACTION"),
    Option("reserved_enis", "0", _non_negative, "ENIs left out of ENI-limited max-pods.",
           "AWS", "N"),
    Option("interruption_queue", "", _queue_name, "SQS queue name of interruption events; "
           "empty turns interruption handling off.", "AWS", "NAME"),
    Option("disable_dry_run", "false", _bool, "Skip EC2 dry-run authorization checks of "
           "EC2NodeClasses.", "AWS", _BOOL),
    Option("enable_zonal_shift", "false", _bool, "Treat zones under an ARC zonal shift as "
           "unavailable.", "AWS", _BOOL),
    Option("ami_refresh_interval", "1m", _duration(MINUTE, "must be at least 1m"), "How often "
           "AMIs are resolved again.", "AWS", _DURATION),
    Option("subnet_refresh_interval", "1m", _duration(MINUTE, "must be at least 1m"), "How "
           "often subnets are resolved again.", "AWS", _DURATION),
    Option("metrics_port", "8080", _port, "Port of /metrics.", "operator", "PORT"),
    Option("health_probe_port", "8081", _port, "Port of /healthz and /readyz.", "operator",
           "PORT"),
    Option("enable_profiling", "false", _bool, "Serve profiling endpoints on the metrics "
           "port.", "operator", _BOOL),
    Option("disable_leader_election", "false", _bool, "Run without a leader-election lease "
           "(one replica only).", "operator", _BOOL),
    Option("leader_election_name", "karpy-leader-election", _lease_name, "Name of the "
           "leader-election Lease.", "operator", "NAME"),
    Option("leader_election_namespace", "", _namespace, "Namespace of the leader-election "
           "Lease.", "operator", "NAMESPACE", shown_default="the pod's namespace "
           "(SYSTEM_NAMESPACE, else the service-account file), else kube-system"),
    Option("disable_controller_warmup", "false", _bool, "When true, followers wait until they "
           "win the lease before starting informers (slower fail-over, less memory on "
           "standbys).", "operator", _BOOL),
    Option("disable_cluster_state_observability", "false", _bool, "Turn off cluster-state "
           "and status-condition metrics.", "operator", _BOOL),
    Option("kube_client_qps", "200", _qps, "Sustained API requests per second (negative: no "
           "limit).", "operator", "N"),
    Option("kube_client_burst", "300", _positive, "API request burst.", "operator", "N"),
    Option("memory_limit", "-1", _int, "Container memory limit in bytes (<= 0: none).",
           "operator", "BYTES"),
    Option("cpu_requests", "1000", _cpu_requests, "Container CPU request in millicores; sizes "
           "concurrency (<= 0 counts as 1000).", "operator", "MILLICORES"),
    Option("log_level", "info", _log_level, "debug, info, warn or error (empty: "
           "info).", "logging", "LEVEL"),
    Option("log_format", "json", _choice(*LOG_FORMATS), "karpy: json, one object per line, or "
           "console, for people.", "logging", "FORMAT"),
    Option("log_output_paths", "stdout", _paths, "Where logs go: stdout, stderr or file paths, "
           "comma-separated.", "logging", "PATHS"),
    Option("log_error_output_paths", "stderr", _paths, "Where failures to write a log line are "
           "reported.", "logging", "PATHS"),
)
# fmt: on
OPTIONS_BY_FIELD = {option.field: option for option in OPTIONS}

# Karpenter settings karpy does not implement and will not silently ignore when set.
UNSUPPORTED = {
    "SCHEDULER_CONFIG": "not supported by karpy yet (kube-scheduler default spread "
    "constraints are not mirrored); unset it",
}


# --- the settings record ------------------------------------------------------------------


@attrs.frozen(slots=True, kw_only=True)
class Settings:
    """The effective configuration. Defaults are Karpenter's (karpy's for its own settings),
    so `Settings(cluster_name="x")` is a valid configuration for tests and tools."""

    cluster_name: str = ""
    cluster_endpoint: str = ""
    cluster_ca_bundle: str = ""
    kubeconfig: str | None = None
    eks_control_plane: bool = False
    isolated_vpc: bool = False
    batch_max_duration: int = 10 * SECOND  # nanoseconds, as every duration here
    batch_idle_duration: int = 1 * SECOND
    scheduling_timeout: int = 30 * SECOND
    preference_policy: str = "Respect"
    min_values_policy: str = "Strict"
    ignore_dra_requests: bool = True
    feature_gates: FeatureGates = FeatureGates()
    aws_feature_gates: AWSFeatureGates = AWSFeatureGates()
    vm_memory_overhead_percent: float = 0.075
    reserved_enis: int = 0
    interruption_queue: str = ""
    disable_dry_run: bool = False
    enable_zonal_shift: bool = False
    ami_refresh_interval: int = MINUTE
    subnet_refresh_interval: int = MINUTE
    metrics_port: int = 8080
    health_probe_port: int = 8081
    enable_profiling: bool = False
    disable_leader_election: bool = False
    leader_election_name: str = "karpy-leader-election"
    leader_election_namespace: str = FALLBACK_NAMESPACE
    disable_controller_warmup: bool = False
    disable_cluster_state_observability: bool = False
    kube_client_qps: int = 200
    kube_client_burst: int = 300
    memory_limit: int = -1
    cpu_requests: int = 1000
    log_level: str = "info"
    log_format: str = "json"
    log_output_paths: tuple[str, ...] = ("stdout",)
    log_error_output_paths: tuple[str, ...] = ("stderr",)

    @classmethod
    def from_env_and_args(
        cls,
        env: Mapping[str, str],
        args: argparse.Namespace,
        *,
        service_account_namespace: str | None = None,
        require_cluster_name: bool = True,
    ) -> Settings:
        """Settings from ``env``, overridden by the flags in ``args`` (an attribute that is
        absent or None is a flag not given). Raises `SettingsError` naming every unusable
        value. ``service_account_namespace`` is the pod's namespace from its
        service-account file, if it runs in one (`read_service_account_namespace`)."""
        values: dict[str, Any] = {}
        texts: dict[str, str | None] = {}
        errors: list[str] = []
        for option in OPTIONS:
            flag_value = getattr(args, option.field, None)
            text = flag_value if flag_value is not None else env.get(option.env)
            texts[option.field] = text
            try:
                values[option.field] = option.parse(option.default if text is None else text)
            except _Invalid as exc:
                errors.append(_describe(option, text, exc.rule))
        errors.extend(_cross_checks(values, texts, require_cluster_name=require_cluster_name))
        errors.extend(f"{name} = {json.dumps(env[name])}: {reason}"
                      for name, reason in UNSUPPORTED.items() if env.get(name))  # fmt: skip
        if values.get("leader_election_namespace") == "":
            try:
                values["leader_election_namespace"] = _pod_namespace(env, service_account_namespace)
            except _Invalid as exc:
                errors.append(exc.rule)
        if errors:
            raise SettingsError(errors)
        return cls(**values)

    def as_log_fields(self) -> dict[str, Any]:
        """The configuration as log fields keyed by camelCase flag names, safe to log: the
        CA bundle appears as `clusterCA`, its length and digest (a name the log redaction
        of ``*caBundle*`` fields leaves alone), and a URL without its user-info."""
        fields: dict[str, Any] = {}
        for option in OPTIONS:
            key = re.sub(r"-(\w)", lambda m: m[1].upper(), option.flag[2:])
            value = getattr(self, option.field)
            if option.metavar == _DURATION:
                value = format_duration(value)
            elif isinstance(value, FeatureGates | AWSFeatureGates):
                value = value.as_dict()
            elif option.field == "cluster_ca_bundle":
                key, value = "clusterCA", _digest(value)
            elif option.field == "cluster_endpoint":
                value = _without_userinfo(value)
            fields[key] = value
        return fields


def _describe(option: Option, text: str | None, rule: str) -> str:
    value = option.default if text is None else text
    shown = json.dumps(value, ensure_ascii=False) if option.echo_value else f"<{len(value)} chars>"
    return " ".join(f"{option.label} = {shown}: {rule}".split())  # always a single line


def _cross_checks(
    values: dict[str, Any], texts: dict[str, str | None], *, require_cluster_name: bool
) -> list[str]:
    errors: list[str] = []
    if require_cluster_name and values.get("cluster_name") == "":
        name = OPTIONS_BY_FIELD["cluster_name"]
        if texts["cluster_name"] is None:
            errors.append(f"{name.label} is not set: required, the name of the cluster")
        else:
            errors.append(_describe(name, "", "required, must not be empty"))
    idle, most = values.get("batch_idle_duration"), values.get("batch_max_duration")
    if idle is not None and most is not None and idle > most:
        rule = f"must not exceed BATCH_MAX_DURATION ({format_duration(most)})"
        errors.append(_describe(OPTIONS_BY_FIELD["batch_idle_duration"],
                                texts["batch_idle_duration"], rule))  # fmt: skip
    metrics, health = values.get("metrics_port"), values.get("health_probe_port")
    if metrics is not None and metrics == health:
        rule = f"must differ from METRICS_PORT ({metrics})"
        errors.append(_describe(OPTIONS_BY_FIELD["health_probe_port"],
                                texts["health_probe_port"], rule))  # fmt: skip
    return errors


def _pod_namespace(env: Mapping[str, str], service_account_namespace: str | None) -> str:
    """The namespace karpy runs in: SYSTEM_NAMESPACE (the Helm chart sets it from the
    downward API), else the service-account file's, else kube-system."""
    for source, candidate in (
        ("SYSTEM_NAMESPACE", env.get("SYSTEM_NAMESPACE")),
        (SERVICE_ACCOUNT_NAMESPACE_FILE, service_account_namespace),
    ):
        if candidate:
            if not _DNS_LABEL.match(candidate):
                shown = json.dumps(candidate, ensure_ascii=False)
                raise _Invalid(f"{source} = {shown}: must be a namespace name")
            return candidate
    return FALLBACK_NAMESPACE


def _digest(bundle: str) -> dict[str, Any] | None:
    if not bundle:
        return None
    return {"length": len(bundle), "sha256": hashlib.sha256(bundle.encode()).hexdigest()[:16]}


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="<redacted>@" + parts.netloc.rpartition("@")[2]))


def read_service_account_namespace(path: str = SERVICE_ACCOUNT_NAMESPACE_FILE) -> str | None:
    """The pod's namespace from its mounted service-account token; None outside a pod."""
    try:
        with open(path, encoding="utf-8") as file:
            return file.read().strip() or None
    except OSError:
        return None


# --- flags --------------------------------------------------------------------------------


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps a setting's description but keeps its ``env: X, default: Y`` line whole, so
    the variable and its default can be read (and grepped) on one line."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        description, _, origin = text.partition("\n")
        return [*super()._split_lines(description, width), *filter(None, [origin])]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register every setting's flag on ``parser``. Flags hold text, checked later by
    `Settings.from_env_and_args`, so a bad flag and a bad env var fail the same way, on one
    line. A boolean flag given alone means true (``--isolated-vpc``), as in Karpenter."""
    parser.formatter_class = _HelpFormatter
    groups: dict[str, Any] = {}
    for option in OPTIONS:
        if option.group not in groups:
            groups[option.group] = parser.add_argument_group(f"{option.group} settings")
        shown = option.shown_default or option.default or '""'
        help_text = f"{option.help}\nenv: {option.env}, default: {shown}".replace("%", "%%")
        extra: dict[str, Any] = {"nargs": "?", "const": "true"} if option.parse is _bool else {}
        groups[option.group].add_argument(
            option.flag, dest=option.field, metavar=option.metavar, help=help_text, **extra
        )
