"""What a booting node reads from its user data: labels, taints, max pods, reservations.

The kubelet stand-in for EC2 (`karpy.sandbox.aws.kubelet`) must register each instance's
Node as the real bootstrap would, and the real bootstrap takes everything that matters
to scheduling from the user data karpy's launch code wrote. Three formats exist, the ones
Karpenter writes (its golden files are ``pkg/providers/launchtemplate/testdata/`` of the
AWS provider):

- **AL2023**: a MIME multipart document whose ``application/node.eks.aws`` parts are
  nodeadm ``NodeConfig`` YAML. ``spec.kubelet.config`` holds ``maxPods``,
  ``kubeReserved``, ``systemReserved``, ``evictionHard``, ``clusterDNS`` and
  ``registerWithTaints``; ``spec.kubelet.flags`` may hold ``--node-labels=k=v,...``,
  ``--register-with-taints=k=v:Effect,...``, ``--max-pods=N``, ``--kube-reserved=k=v,...``,
  ``--system-reserved=k=v,...`` and ``--eviction-hard=signal<threshold,...``. Several NodeConfigs
  are merged in order (nodeadm's rule: later values win, flags accumulate). A bare
  NodeConfig (no MIME) is read too.
- **Bottlerocket**: TOML, ``[settings.kubernetes]`` with ``max-pods``, ``node-labels``,
  ``node-taints`` (``key = ['value:Effect']``), ``kube-reserved``, ``system-reserved``,
  ``eviction-hard``.
- **AL2**: a shell script calling ``/etc/eks/bootstrap.sh`` with ``--kubelet-extra-args``
  carrying the same kubelet flags.

Parsing is tolerant: what cannot be read is listed in `NodeBootstrap.problems` (the
stand-in logs them) and the rest is still used, as a half-written user data still boots
a node with kubelet defaults.
"""

from __future__ import annotations

import base64
import binascii
import email
import email.message
import re
import shlex
import tomllib
from typing import Any, Final

import attrs
import yaml

__all__ = ["NodeBootstrap", "Taint", "parse_user_data"]

NODEADM_CONTENT_TYPE: Final = "application/node.eks.aws"
FLAG: Final = re.compile(r"--(?P<name>[a-z-]+)(?:=(?P<value>\"[^\"]*\"|'[^']*'|\S*))?")


@attrs.frozen(slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def to_dict(self) -> dict[str, str]:
        found = {"key": self.key, "effect": self.effect}
        if self.value:
            found["value"] = self.value
        return found


@attrs.frozen(slots=True)
class NodeBootstrap:
    """The kubelet settings a user data states (quantities as written, unparsed)."""

    format: str
    labels: dict[str, str] = attrs.field(factory=dict)
    taints: tuple[Taint, ...] = ()
    max_pods: int | None = None
    kube_reserved: dict[str, str] = attrs.field(factory=dict)
    system_reserved: dict[str, str] = attrs.field(factory=dict)
    eviction_hard: dict[str, str] = attrs.field(factory=dict)
    cluster_dns: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


@attrs.define
class _Builder:
    """Accumulates settings from the parts of a user data, later parts winning."""

    format: str
    labels: dict[str, str] = attrs.field(factory=dict)
    taints: dict[tuple[str, str], Taint] = attrs.field(factory=dict)
    max_pods: int | None = None
    kube_reserved: dict[str, str] = attrs.field(factory=dict)
    system_reserved: dict[str, str] = attrs.field(factory=dict)
    eviction_hard: dict[str, str] = attrs.field(factory=dict)
    cluster_dns: tuple[str, ...] = ()
    problems: list[str] = attrs.field(factory=list)

    def taint(self, taint: Taint) -> None:
        self.taints[(taint.key, taint.effect)] = taint

    def flags(self, text: str) -> None:
        """Apply kubelet command-line flags (``--node-labels=...`` and friends)."""
        for match in FLAG.finditer(text):
            name, value = match.group("name"), (match.group("value") or "").strip("'\"")
            if name == "node-labels":
                for pair in filter(None, value.split(",")):
                    key, _, label = pair.partition("=")
                    self.labels[key.strip()] = label.strip()
            elif name == "register-with-taints":
                for spec in filter(None, value.split(",")):
                    parsed = _taint_spec(spec.strip())
                    if parsed is None:
                        self.problems.append(f"taint {spec!r}: not key[=value]:Effect")
                    else:
                        self.taint(parsed)
            elif name == "max-pods":
                self.max_pods = _int(value, "--max-pods", self.problems) or self.max_pods
            elif name in ("kube-reserved", "system-reserved", "eviction-hard"):
                target = {"kube-reserved": self.kube_reserved,
                          "system-reserved": self.system_reserved,
                          "eviction-hard": self.eviction_hard}[name]  # fmt: skip
                separator = "<" if name == "eviction-hard" else "="
                for pair in filter(None, value.split(",")):
                    key, sep, amount = pair.partition(separator)
                    if sep:
                        target[key.strip()] = amount.strip()
                    else:
                        self.problems.append(f"--{name} {pair!r}: not key{separator}value")

    def build(self) -> NodeBootstrap:
        return NodeBootstrap(
            format=self.format,
            labels=dict(self.labels),
            taints=tuple(self.taints.values()),
            max_pods=self.max_pods,
            kube_reserved=dict(self.kube_reserved),
            system_reserved=dict(self.system_reserved),
            eviction_hard=dict(self.eviction_hard),
            cluster_dns=self.cluster_dns,
            problems=tuple(self.problems),
        )


def _int(value: Any, what: str, problems: list[str]) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        problems.append(f"{what} {value!r}: not a whole number")
        return None


def _taint_spec(spec: str) -> Taint | None:
    """``key=value:Effect`` or ``key:Effect`` (kubelet's --register-with-taints)."""
    head, sep, effect = spec.rpartition(":")
    if not sep or not head or not effect:
        return None
    key, _, value = head.partition("=")
    return Taint(key, value, effect)


def _strings(raw: Any, what: str, problems: list[str]) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(f"{what}: not a mapping")
        return {}
    return {str(k): str(v) for k, v in raw.items()}


# -- AL2023 (nodeadm) -----------------------------------------------------------------


def _node_config(builder: _Builder, text: str) -> None:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as error:
        builder.problems.append(f"NodeConfig: not YAML ({error.__class__.__name__})")
        return
    if not isinstance(doc, dict) or doc.get("kind") != "NodeConfig":
        builder.problems.append("a node.eks.aws part that is not a NodeConfig")
        return
    kubelet = (doc.get("spec") or {}).get("kubelet") or {}
    config = kubelet.get("config") or {}
    problems = builder.problems
    if "maxPods" in config:
        builder.max_pods = _int(config["maxPods"], "maxPods", problems) or builder.max_pods
    builder.kube_reserved.update(_strings(config.get("kubeReserved"), "kubeReserved", problems))
    builder.system_reserved.update(
        _strings(config.get("systemReserved"), "systemReserved", problems)
    )
    builder.eviction_hard.update(_strings(config.get("evictionHard"), "evictionHard", problems))
    if config.get("clusterDNS"):
        builder.cluster_dns = tuple(str(ip) for ip in config["clusterDNS"])
    for taint in config.get("registerWithTaints") or ():
        if isinstance(taint, dict) and taint.get("key") and taint.get("effect"):
            builder.taint(Taint(str(taint["key"]), str(taint.get("value") or ""),
                                str(taint["effect"])))  # fmt: skip
        else:
            problems.append(f"registerWithTaints entry {taint!r}: needs key and effect")
    for flag in kubelet.get("flags") or ():
        builder.flags(str(flag))


def _mime_parts(text: str) -> list[email.message.Message]:
    message = email.message_from_string(text)
    if not message.is_multipart():
        return [message]
    return [part for part in message.walk() if not part.is_multipart()]


def _payload(part: email.message.Message) -> str:
    raw = part.get_payload(decode=True)
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "replace")
    return str(part.get_payload())


def _al2023_or_al2(text: str) -> NodeBootstrap:
    parts = _mime_parts(text)
    nodeadm = [p for p in parts if p.get_content_type() == NODEADM_CONTENT_TYPE]
    if nodeadm:
        builder = _Builder("al2023")
        for part in nodeadm:
            _node_config(builder, _payload(part))
        return builder.build()
    builder = _Builder("al2")
    scripts = [_payload(p) for p in parts if p.get_content_type() == "text/x-shellscript"]
    for script in scripts:
        _bootstrap_sh(builder, script)
    if not any("/etc/eks/bootstrap.sh" in script for script in scripts):
        builder.problems.append("no NodeConfig and no /etc/eks/bootstrap.sh call")
    return builder.build()


# -- AL2 (bootstrap.sh) -----------------------------------------------------------------


def _bootstrap_sh(builder: _Builder, script: str) -> None:
    joined = script.replace("\\\n", " ")
    for line in joined.splitlines():
        if "/etc/eks/bootstrap.sh" not in line:
            continue
        try:
            words = shlex.split(line)
        except ValueError:
            builder.problems.append("bootstrap.sh call: unbalanced quotes")
            continue
        for index, word in enumerate(words):
            if word == "--kubelet-extra-args" and index + 1 < len(words):
                builder.flags(words[index + 1])
            elif word == "--dns-cluster-ip" and index + 1 < len(words):
                builder.cluster_dns = (words[index + 1],)


# -- Bottlerocket ---------------------------------------------------------------------


def _bottlerocket(text: str) -> NodeBootstrap:
    builder = _Builder("bottlerocket")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        builder.problems.append(f"Bottlerocket settings: not TOML ({error})")
        return builder.build()
    kubernetes = (doc.get("settings") or {}).get("kubernetes") or {}
    problems = builder.problems
    if "max-pods" in kubernetes:
        builder.max_pods = _int(kubernetes["max-pods"], "max-pods", problems)
    builder.labels.update(_strings(kubernetes.get("node-labels"), "node-labels", problems))
    for key, values in (kubernetes.get("node-taints") or {}).items():
        for spec in values if isinstance(values, list) else [values]:
            value, sep, effect = str(spec).rpartition(":")
            if sep and effect:
                builder.taint(Taint(str(key), value, effect))
            else:
                problems.append(f"node-taints {key} = {spec!r}: not value:Effect")
    builder.kube_reserved.update(_strings(kubernetes.get("kube-reserved"), "kube-reserved",
                                          problems))  # fmt: skip
    builder.system_reserved.update(
        _strings(kubernetes.get("system-reserved"), "system-reserved", problems)
    )
    builder.eviction_hard.update(_strings(kubernetes.get("eviction-hard"), "eviction-hard",
                                          problems))  # fmt: skip
    if kubernetes.get("cluster-dns-ip"):
        dns = kubernetes["cluster-dns-ip"]
        builder.cluster_dns = tuple(dns) if isinstance(dns, list) else (str(dns),)
    return builder.build()


def parse_user_data(user_data: str | bytes | None) -> NodeBootstrap:
    """Read a user data (base64 as EC2 returns it, or plain text) in any of the formats of
    the module docstring."""
    if not user_data:
        return NodeBootstrap(format="empty", problems=("no user data",))
    raw = user_data.encode() if isinstance(user_data, str) else user_data
    try:
        decoded = base64.b64decode(raw, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        decoded = raw.decode("utf-8", "replace")
    text = decoded.lstrip()
    if text.startswith("[") or "[settings" in text:
        return _bottlerocket(text)
    if (
        text.startswith(("apiVersion:", "kind:", "#"))
        and "NodeConfig" in text
        and ("MIME-Version" not in text)
    ):
        builder = _Builder("al2023")
        _node_config(builder, text)
        return builder.build()
    return _al2023_or_al2(text)
