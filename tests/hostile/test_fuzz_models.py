"""Property-based fuzzing of the other files edgetool reads: demo label files and a SavedModel's
saved_model.pb / variables. Random and mutated bytes must end in edgetool's typed errors, never another
exception (called in-process; derandomized, bounded example counts as in test_fuzz_readers)."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge_tool.core.env import import_tf
from edge_tool.demo.model import read_labels
from edge_tool.errors import ModelError, UsageError
from edge_tool.models.signatures import saved_model_flavor, saved_model_signature
from tests.hostile.test_fuzz_readers import FUZZ, _mutate


def test_label_files(tmp_path_factory):
    path = tmp_path_factory.mktemp("labels") / "labels.txt"
    seed = "zero\nun\nzwei\n三\n".encode()

    @FUZZ
    @given(data=st.data(), classes=st.sampled_from([None, 3, 4]))
    def run(data, classes):
        path.write_bytes(_mutate(data, seed) if data.draw(st.booleans()) else data.draw(st.binary(max_size=300)))
        try:
            labels = read_labels(path, classes)
        except UsageError as exc:
            assert str(path) in str(exc)
        else:
            assert labels and all(label == label.strip() and label for label in labels)
            assert classes is None or len(labels) == classes

    run()


@pytest.mark.parametrize(
    "target", ["saved_model.pb", "variables/variables.index", "variables/variables.data-00000-of-00001"]
)
def test_mutated_saved_model_files(target, flat_model, tmp_path_factory):
    """Reading the signature (what every command does first) only raises ModelError, naming the model."""
    import_tf()
    model = tmp_path_factory.mktemp("sm") / "model"
    shutil.copytree(flat_model, model)
    seed = (flat_model / target).read_bytes()

    @FUZZ
    @given(data=st.data())
    def run(data):
        (model / target).write_bytes(_mutate(data, seed))
        try:
            saved_model_signature(model)
            saved_model_flavor(model)
        except ModelError as exc:
            assert str(model) in str(exc)

    run()
