#!/usr/bin/env bash
# Set up ./.venv and run the whole test suite (extra args go to pytest). EDGETOOL_TF / EDGETOOL_PYTHON pick another
# row of the support matrix, as for scripts/setup.sh (its own venv, e.g. ./.venv-tf2.21-py3.12).
# --quick (first argument): the inner loop's tier, every test not marked slow (-m "not slow"; budget 5 min on 2
# cores, README.md "Tests"); the full suite's budget is 30 min.
# Test files run in parallel worker processes (pytest-xdist; a file stays on one worker): one more than the CPUs, at
# most 4: a worker spends part of its time waiting on its edgetool, browser and board children, so one more worker
# than cores keeps the cores busy (README.md, "Tests", has the measured times).
# EDGETOOL_TEST_WORKERS=N overrides it (0: everything in this one process). Ends by printing pytest's wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=()
if [ "${1:-}" = "--quick" ]; then
  shift
  tier=(-m "not slow")
fi
bash scripts/setup.sh
source scripts/stack.sh
cpus=$(nproc 2>/dev/null || echo 1)
workers=${EDGETOOL_TEST_WORKERS:-$((cpus < 3 ? cpus + 1 : 4))}
start=$SECONDS
status=0
"$VENV/bin/python" -m pytest -n "$workers" --dist loadfile "${tier[@]}" "$@" || status=$?
took=$((SECONDS - start))
printf 'pytest: %d:%02d wall (%s, %s workers, %s cores)\n' $((took / 60)) $((took % 60)) \
  "${tier[*]:-full suite}" "$workers" "$cpus"
exit "$status"
