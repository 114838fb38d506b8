#!/usr/bin/env bash
# Create ./.venv and install edgetool with its pinned stack (idempotent; reinstalls when pyproject/lockfiles change).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' \
  || { echo "edgetool needs Python 3.11 (found $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2; exit 2; }
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
stamp_src=$(for f in pyproject.toml web_demo/package.json web_demo/package-lock.json; do [ ! -f "$f" ] || cat "$f"; done | sha256sum | cut -c1-16)
stamp=".venv/.edgetool-installed-$stamp_src"
if [ ! -f "$stamp" ]; then
  echo "==> installing edgetool and its pinned stack into ./.venv (first run downloads ~1.5 GB)"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  # onnx: the optional --format onnx extra; the test suite exercises it (tests/test_convert_onnx.py)
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[test,onnx]"
  # mediapipe (tests/test_metadata.py runs its ImageClassifier) cannot be resolved with tensorflow-model-optimization
  # (absl-py~=2.3 vs ~=1.2); its Python code imports absl only in its own tests, so it goes in without dependencies
  # (the others are in the test extra). pip prints that absl-py conflict; it is expected.
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "mediapipe==1.2.3"
  rm -f .venv/.edgetool-installed-*
  touch "$stamp"
fi
if [ -f web_demo/package.json ]; then
  .venv/bin/python scripts/vendor_runtimes.py --quiet
fi
