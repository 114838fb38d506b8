"""Quantization-aware training: a tf_keras model fine-tuned with tfmot fake-quant and converted to full-integer
int8 TFLite (``pipeline.run_qat``; ``export.qat_to_tflite``), with QAT-vs-PTQ choice (``select``).

Its steps: the source model (``source``), its graph (``graph``), exact folds (``fold_plan``, ``folding``), tfmot
annotation (``annotate``), fake-quant range start (``ranges``), output heads (``heads``), labelled data (``data``),
fine-tuning (``finetune``). It sits below ``convert``, whose ``modes/qat`` plug-in runs it (``modes/qat_build``),
and imports none of it."""
