#!/usr/bin/env bash
# Set up ./.venv and run the whole trip on bundled digits: train -> inspect -> convert -> eval -> micro -> check -> demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/stack.sh  # EDGETOOL_TF / EDGETOOL_PYTHON: another row's venv
OUT="${OUT:-quickstart-out}"
et() { echo; echo "+ edgetool $*"; "$VENV/bin/edgetool" "$@"; }
et train --strategy mirrored --replicas 2 -o "$OUT/model" --force
et inspect "$OUT/model"
et convert "$OUT/model" --format all -o "$OUT/converted" --force
et convert "$OUT/model" --quant auto --max-drop 0.01 --eval-data "$OUT/model/eval.npz" -o "$OUT/auto" --force
et eval "$OUT"/converted/*.tflite "$OUT/converted/tfjs" --reference "$OUT/model" --data "$OUT/model/eval.npz" \
  --max-drop 0.03 --json "$OUT/eval.json" --markdown "$OUT/eval.md" --html "$OUT/eval.html" --force
et convert "$OUT/model" --quant int8 --format micro -o "$OUT/micro" --force
et eval "$OUT/micro/model_int8.tflite" --runtime tflm --reference "$OUT/model" --data "$OUT/model/eval.npz" \
  --runs 20 --max-drop 0.03 --max-arena-kb 64 --max-flash-kb 256 --json "$OUT/eval-tflm.json" --force
et check "$OUT/model" --target all
et demo "$OUT/converted/tfjs" --labels "$OUT/model/labels.txt" --title "edgetool digits" -o "$OUT/site" --force
echo
echo "Done. Report: $OUT/eval.html   Demo: serve it with   $VENV/bin/edgetool serve $OUT/site"
