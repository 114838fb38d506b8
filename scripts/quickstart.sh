#!/usr/bin/env bash
# Set up ./.venv and run the whole trip on bundled data: digits (train -> inspect -> convert -> eval -> micro -> check ->
# demo), then a language model on bundled text (train -> inspect -> convert every LM mode -> eval -> check -> demo).
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
# a language model: a byte-level decoder trained on bundled public-domain text (KJV Genesis + Exodus), its prefill/decode
# endpoints converted to one multi-signature .tflite per mode (+ .litertlm for LiteRT-LM), measured against the
# SavedModel on its held-out text (perplexity drift, agreement, continuations, TTFT, tokens/s), and a streaming page
et train --model lm --strategy mirrored --replicas 2 --epochs 6 -o "$OUT/lm" --force  # 6 of the default 8: ~200 CPU-s
et inspect "$OUT/lm"
et convert "$OUT/lm" --quant fp32,fp16,dynamic,weight-int8,weight-int4 --litertlm -o "$OUT/lm-converted" --force
et convert "$OUT/lm" --quant auto --max-drop 0.01 --eval-data "$OUT/lm/heldout.txt" -o "$OUT/lm-auto" --force
et eval "$OUT"/lm-converted/*.tflite --reference "$OUT/lm" --text "$OUT/lm/heldout.txt" \
  --json "$OUT/eval-lm.json" --markdown "$OUT/eval-lm.md" --html "$OUT/eval-lm.html" --force
et check "$OUT/lm-converted/lm_fp32.tflite" --target litertjs
et demo "$OUT/lm-converted/lm_dynamic.tflite" -o "$OUT/lm-site" --force
echo
echo "Done. Reports: $OUT/eval.html, $OUT/eval-lm.html   Demos: $VENV/bin/edgetool serve $OUT/site  (or $OUT/lm-site)"
