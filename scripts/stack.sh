# Sourced by scripts/setup.sh and scripts/test.sh: which (TensorFlow, Python) row of the support matrix to use.
# EDGETOOL_TF (default 2.19) and EDGETOOL_PYTHON (default 3.11) pick a row; each row that was checked has its pins in
# scripts/constraints/tf<TF>-py<PY>.txt. The default row lives in ./.venv, every other in ./.venv-tf<TF>-py<PY>.
EDGETOOL_TF="${EDGETOOL_TF:-2.19}"
EDGETOOL_PYTHON="${EDGETOOL_PYTHON:-3.11}"
STACK_ROW="tf${EDGETOOL_TF}-py${EDGETOOL_PYTHON}"
STACK_CONSTRAINTS="scripts/constraints/${STACK_ROW}.txt"
if [ "$EDGETOOL_TF" = 2.19 ] && [ "$EDGETOOL_PYTHON" = 3.11 ]; then VENV=.venv; else VENV=".venv-${STACK_ROW}"; fi
if [ ! -f "$STACK_CONSTRAINTS" ]; then
  rows=$(cd scripts/constraints && ls ./*.txt | sed 's|^\./||; s|\.txt$||; s|^tf\([^-]*\)-py\(.*\)|EDGETOOL_TF=\1 EDGETOOL_PYTHON=\2|' | paste -sd ';' | sed 's/;/; /g')
  echo "no checked stack for TensorFlow $EDGETOOL_TF on Python $EDGETOOL_PYTHON ($STACK_CONSTRAINTS does not exist)." \
    "The rows that were checked: $rows." >&2
  exit 2
fi
