"""Helpers for QAT: fold BatchNorm/Rescaling into weights, annotate for tfmot, calibrate fake-quant ranges."""
