"""How fast is `edgetool --help` compared with importing TensorFlow? (target: <= 5 %)

Runs both alternately N times in fresh processes, prints the medians and the ratio, and writes the
`help` section of benchmarks/RESULTS.md.  Usage: .venv/bin/python benchmarks/bench_help.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from _results import machine, table, write_section

CASES = {
    "edgetool --help": [sys.executable, "-m", "edge_tool", "--help"],
    'python -c "import tensorflow"': [sys.executable, "-c", "import tensorflow"],
}


def time_once(cmd: list[str]) -> float:
    """Wall seconds of one fresh-process run."""
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": ""})
    return time.perf_counter() - start


def main() -> None:
    """Measure, print and record."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    samples = {name: [] for name in CASES}
    time_once(CASES["edgetool --help"])  # warm the page cache once for both
    time_once(CASES['python -c "import tensorflow"'])
    for _ in range(args.runs):
        for name, cmd in CASES.items():
            samples[name].append(time_once(cmd))
    med = {name: statistics.median(v) for name, v in samples.items()}
    ratio = med["edgetool --help"] / med['python -c "import tensorflow"']
    rows = [
        [name, f"{med[name] * 1000:.0f} ms", f"{min(v) * 1000:.0f}–{max(v) * 1000:.0f} ms"]
        for name, v in samples.items()
    ]
    body = (
        f"## CLI start-up (`benchmarks/bench_help.py`, {args.runs} alternating runs)\n\nMachine: {machine()}\n\n"
        + table(["command", "median", "range"], rows)
        + f"\n\n`edgetool --help` takes **{ratio * 100:.1f} %** of `import tensorflow` (target ≤ 5 %).\n"
    )
    print(body)
    write_section("help", body)


if __name__ == "__main__":
    main()
