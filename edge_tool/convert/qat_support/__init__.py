"""Helpers for QAT: fold BatchNorm/Rescaling into the conv/dense weights, annotate layers for tfmot."""
