"""Helpers for QAT: the model graph (graph), exact folds (folding), tfmot annotation (annotate), fake-quant range
start (ranges), classifier heads (heads), labelled data (data), fine-tuning (finetune), QAT-vs-PTQ choice (select)."""
