#!/usr/bin/env bash
# Set up ./.venv and run the whole trip on bundled digits: train -> inspect -> convert -> eval -> demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OUT="${OUT:-quickstart-out}"
et() { echo "+ edgetool $*"; .venv/bin/edgetool "$@"; }
et train --strategy mirrored --replicas 2 -o "$OUT/model" --force
et inspect "$OUT/model"
