"""``python -m tests.bench [NAME ...]``: run the benchmark modules (all, or those named).

Each ``tests/bench/bench_<name>.py`` exposes ``main(results_dir: pathlib.Path) -> None``;
results go to ``bench/results/`` under the current directory.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import tests.bench


def main(argv: list[str]) -> int:
    results_dir = Path("bench/results")
    results_dir.mkdir(parents=True, exist_ok=True)
    wanted = set(argv)
    names = sorted(
        m.name for m in pkgutil.iter_modules(tests.bench.__path__) if m.name.startswith("bench_")
    )
    for name in names:
        if wanted and name not in wanted and name.removeprefix("bench_") not in wanted:
            continue
        module = importlib.import_module(f"tests.bench.{name}")
        print(f"== {name}", flush=True)
        module.main(results_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
