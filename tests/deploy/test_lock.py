"""What each install installs: the image's pinned requirements (``deploy/requirements.lock``
and ``deploy/requirements-build.lock``, made by ``make lock``), the package metadata they are
made from, and ``make run``'s demo install.

The image installs exactly what the locks name, with ``--require-hashes --no-deps``: a
runtime dependency pyproject gained but the lock lacks would be missing from the image, and
a pin outside pyproject's range would run code nobody tested. So every requirement of
``[project].dependencies`` (and of ``[build-system].requires`` for the build lock) must be
pinned, ``==`` one version inside its range, with hashes; and nothing that only the dev or
sandbox extras want may slip into the image.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
RUNTIME_LOCK = ROOT / "deploy" / "requirements.lock"
BUILD_LOCK = ROOT / "deploy" / "requirements-build.lock"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>\S+)\s*(?:\\)?$")


def pins(lock: Path) -> dict[str, tuple[Version, list[str]]]:
    """Package name → (pinned version, its hashes), read as pip reads a hash-checked file:
    one requirement per logical line, continuation lines carrying ``--hash=sha256:...``."""
    found: dict[str, tuple[Version, list[str]]] = {}
    current = ""
    for line in lock.read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = PIN.match(stripped)
        if match:
            current = canonicalize_name(match["name"])
            found[current] = (Version(match["version"]), [])
        elif stripped.startswith("--hash=sha256:") and current:
            found[current][1].append(stripped.removeprefix("--hash=sha256:").rstrip(" \\"))
        else:
            raise AssertionError(f"{lock.name}: not a pin or a hash: {line!r}")
    return found


def assert_covers(lock: Path, requirements: list[str]) -> None:
    pinned = pins(lock)
    for text in requirements:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{lock.name} does not pin {requirement.name}: run make lock"
        version, _ = pinned[name]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{lock.name} pins {name}=={version}, outside pyproject's {requirement.specifier}"
        )


def test_runtime_lock_pins_every_dependency_inside_its_range():
    assert_covers(RUNTIME_LOCK, PYPROJECT["project"]["dependencies"])


def test_build_lock_pins_the_build_backend_inside_its_range():
    assert_covers(BUILD_LOCK, PYPROJECT["build-system"]["requires"])


@pytest.mark.parametrize("lock", [RUNTIME_LOCK, BUILD_LOCK], ids=lambda p: p.name)
def test_every_pin_carries_sha256_hashes(lock: Path):
    for name, (version, hashes) in pins(lock).items():
        assert hashes, f"{lock.name}: {name}=={version} has no hash"
        assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), f"{name}: {hashes}"


def test_runtime_lock_holds_nothing_only_the_extras_want():
    runtime = {canonicalize_name(Requirement(r).name) for r in PYPROJECT["project"]["dependencies"]}
    extras_only = {
        canonicalize_name(Requirement(r).name)
        for group in PYPROJECT["project"]["optional-dependencies"].values()
        for r in group
    } - runtime
    leaked = extras_only & set(pins(RUNTIME_LOCK))
    assert not leaked, f"dev or sandbox packages in the image's lock: {sorted(leaked)}"


def test_pins_parse_a_hash_checked_file_as_pip_does(tmp_path):
    lock = tmp_path / "requirements.lock"
    lock.write_text(
        "# comment\n"
        "attrs==26.1.0 \\\n"
        f"    --hash=sha256:{'a' * 64} \\\n"
        f"    --hash=sha256:{'b' * 64}\n"
        "    # via karpy (pyproject.toml)\n"
        "PyYAML==6.0.4 \\\n"
        f"    --hash=sha256:{'c' * 64}\n"
    )
    assert pins(lock) == {
        "attrs": (Version("26.1.0"), ["a" * 64, "b" * 64]),
        "pyyaml": (Version("6.0.4"), ["c" * 64]),
    }
    with pytest.raises(AssertionError, match="outside pyproject's"):
        assert_covers(lock, ["attrs>=25.1,<26"])
    with pytest.raises(AssertionError, match="does not pin orjson"):
        assert_covers(lock, ["orjson>=3.10,<4"])


@pytest.mark.slow
def test_building_the_package_prints_no_deprecation_warning(tmp_path):
    """The metadata is what setuptools 77 and later want (an SPDX ``license`` string), so a
    build, ``make run``'s editable install included, is quiet."""
    source = tmp_path / "source"  # a copy: an in-tree build would write into the checkout
    shutil.copytree(ROOT / "karpy", source / "karpy", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--verbose", "--wheel-dir",
         str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    output = built.stdout + built.stderr
    warnings = [line for line in output.splitlines() if "deprecat" in line.lower()]
    assert not warnings, "\n".join(warnings)


def planned_installs(target: str, venv: Path) -> list[str]:
    """The pip installs ``make -n TARGET`` would run into a fresh venv at ``venv``."""
    done = subprocess.run(["make", "--no-print-directory", "-n", "-C", str(ROOT), target,
                           f"VENV={venv}"], capture_output=True, text=True, timeout=30,
                          check=True)  # fmt: skip
    return [line for line in done.stdout.splitlines() if "pip install" in line and " -e " in line]


def test_make_run_installs_what_the_demo_needs_and_no_dev_tools(tmp_path):
    assert planned_installs("run", tmp_path / "venv") == [
        f"{tmp_path}/venv/bin/python -m pip install --quiet -e '.[sandbox]'"
    ]


def test_make_test_still_installs_the_dev_tools(tmp_path):
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / ".sandbox-stamp").touch()  # as `make run` leaves it
    assert planned_installs("test", tmp_path / "venv") == [
        f"{tmp_path}/venv/bin/python -m pip install --quiet -e '.[dev,sandbox]'"
    ]
