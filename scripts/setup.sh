#!/usr/bin/env bash
# Create a venv and install edgetool with one pinned, checked stack (idempotent; reinstalls when pyproject, the
# constraints or the lockfiles change). By default TensorFlow 2.19 on Python 3.11 into ./.venv; another row of the
# support matrix with e.g. `EDGETOOL_TF=2.21 EDGETOOL_PYTHON=3.12 bash scripts/setup.sh` (into ./.venv-tf2.21-py3.12).
# pyproject.toml gives ranges (what `pip install edgetool` accepts); scripts/constraints/<row>.txt pins the versions
# that row was checked with. PYTHON=/path/to/python3.x overrides where the interpreter is looked for.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stack.sh
find_python() {
  local cand
  for cand in "${PYTHON:-}" "python$EDGETOOL_PYTHON" ~/.pyenv/versions/"$EDGETOOL_PYTHON".*/bin/"python$EDGETOOL_PYTHON"; do
    [ -n "$cand" ] && command -v "$cand" >/dev/null 2>&1 || continue
    if "$cand" -c "import sys; sys.exit(0 if '%d.%d' % sys.version_info[:2] == '$EDGETOOL_PYTHON' else 1)" 2>/dev/null; then
      command -v "$cand"
      return 0
    fi
  done
  return 1
}
if [ ! -x "$VENV/bin/python" ]; then
  py=$(find_python) || {
    echo "edgetool's $STACK_ROW stack needs Python $EDGETOOL_PYTHON: not found as \$PYTHON, python$EDGETOOL_PYTHON on" \
      "PATH or under ~/.pyenv/versions/. Set PYTHON=/path/to/python$EDGETOOL_PYTHON." >&2
    exit 2
  }
  "$py" -m venv "$VENV"
fi
stamp_src=$(for f in pyproject.toml setup.py "$STACK_CONSTRAINTS" web_demo/package.json web_demo/package-lock.json; do [ ! -f "$f" ] || cat "$f"; done | sha256sum | cut -c1-16)
stamp="$VENV/.edgetool-installed-$stamp_src"
if [ ! -f "$stamp" ]; then
  echo "==> installing edgetool and the $STACK_ROW stack into ./$VENV (first run downloads ~1.5 GB)"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
  # onnx: the optional --format onnx extra; the test suite exercises it (tests/test_convert_onnx.py)
  extras="test,onnx,lm"
  # keras-hub: only on the rows whose constraints pin it (it needs a tensorflow-text of the same TF minor; pyproject)
  if grep -q '^keras-hub==' "$STACK_CONSTRAINTS"; then extras="$extras,keras-hub"; fi
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c "$STACK_CONSTRAINTS" -e ".[$extras]"
  # mediapipe (tests/test_metadata.py runs its ImageClassifier) cannot be resolved with tensorflow-model-optimization
  # (absl-py~=2.3 vs ~=1.2); its Python code imports absl only in its own tests, so it goes in without dependencies
  # (the others are in the test extra). pip prints that absl-py conflict; it is expected.
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "mediapipe==1.2.3"
  rm -f "$VENV"/.edgetool-installed-*
  touch "$stamp"
fi
if [ -f web_demo/package.json ]; then
  "$VENV/bin/python" scripts/vendor_runtimes.py --quiet
fi
