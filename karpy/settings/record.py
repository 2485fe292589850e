"""The `Settings` record: every option resolved (flag, else env var, else default),
parsed, and checked against the others."""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import attrs

from karpy.durations import MINUTE, SECOND, format_duration
from karpy.settings.gates import AWSFeatureGates, FeatureGates
from karpy.settings.options import _DURATION, OPTIONS, OPTIONS_BY_FIELD, UNSUPPORTED, Option
from karpy.settings.parsers import (
    _DNS_LABEL,
    FALLBACK_NAMESPACE,
    SERVICE_ACCOUNT_NAMESPACE_FILE,
    SettingsError,
    _Invalid,
)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping


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
    feature_gates: FeatureGates = attrs.field(factory=FeatureGates)
    nominated_node_names: bool = False
    legacy_node_repair: bool = False
    aws_feature_gates: AWSFeatureGates = attrs.field(factory=AWSFeatureGates)
    cloud_provider: str = "aws"
    fake_instance_types: str | None = None
    fake_registration_delay: int = 0
    fake_repair_toleration: int = 600 * SECOND
    fake_insufficient_capacity: tuple[tuple[str, str, str], ...] = ()
    vm_memory_overhead_percent: float = 0.075
    reserved_enis: int = 0
    interruption_queue: str = ""
    disable_dry_run: bool = False
    enable_zonal_shift: bool = False
    ami_refresh_interval: int = MINUTE
    subnet_refresh_interval: int = MINUTE
    security_group_refresh_interval: int = MINUTE
    metrics_port: int = 8080
    health_probe_port: int = 8081
    metrics_bind_address: str = "0.0.0.0"
    health_probe_bind_address: str = "0.0.0.0"
    enable_profiling: bool = False
    disable_leader_election: bool = False
    leader_election_name: str = "karpy-leader-election"
    leader_election_namespace: str = FALLBACK_NAMESPACE
    coexist_with_karpenter: bool = False
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
