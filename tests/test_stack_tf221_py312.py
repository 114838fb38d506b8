"""Support-matrix row TensorFlow 2.21 on Python 3.12, installed from the built wheel with plain pip (tests/stack_rows.py)."""

from tests.stack_rows import row_tests

globals().update(row_tests("2.21", "3.12"))
