"""calibration/: every format, input matching, seeded sampling, validation messages, streaming == load."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import numpy as np
import pytest

import edge_tool.calibration.errors as cal
import edge_tool.errors as et
from edge_tool import calibration
from edge_tool.calibration import CalibrationError, InputSpec, LoadOptions, Sampling, iter_source, load
from edge_tool.calibration.readers import npz as npz_reader
from edge_tool.calibration.sampling import select, stratified_counts
from edge_tool.calibration.spec import TensorSpec
from edge_tool.core.env import import_tf
from edge_tool.errors import DataError, UsageError
from edge_tool.models import signatures

PIXELS = InputSpec("pixels", "float32", (None, 8, 8, 1))
ALL = LoadOptions(samples=None)


@pytest.fixture(scope="module")
def digits():
    """Real handwritten digits as uint8 0..255 (n, 8, 8) and labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.images * (255.0 / 16.0)).round().astype(np.uint8), d.target.astype(np.int64)


def _write_pngs(root, images, labels=None):
    from PIL import Image

    for i, img in enumerate(images):
        folder = root if labels is None else root / f"class_{labels[i]}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(img, mode="L").save(folder / f"{i:04d}.png")


def _stream_all(source, specs, options, batch_size=7):
    batches = list(iter_source(source, specs, options, batch_size=batch_size))
    inputs = {k: np.concatenate([b[0][k] for b in batches]) for k in batches[0][0]}
    labels = None if batches[0][1] is None else np.concatenate([b[1] for b in batches])
    return inputs, labels, batches


def _assert_stream_matches(source, specs, options):
    ds = load(source, specs, options)
    inputs, labels, _ = _stream_all(source, specs, options)
    for name, arr in ds.inputs.items():
        assert inputs[name].dtype == arr.dtype
        np.testing.assert_array_equal(inputs[name], arr)
    if ds.labels is None:
        assert labels is None
    else:
        np.testing.assert_array_equal(labels, ds.labels)
    return ds


def _error(source, specs, options=ALL) -> str:
    with pytest.raises(CalibrationError) as info:
        load(source, specs, options)
    return str(info.value)


# ---------------------------------------------------------------- formats


def test_npz_single_input_adds_channel_and_keeps_labels(tmp_path, digits):
    x, y = digits
    path = tmp_path / "d.npz"
    np.savez(path, x=x[:100].astype(np.float64), y=y[:100])
    ds = load(path, [PIXELS], ALL)
    assert ds.inputs["pixels"].dtype == np.float32 and ds.inputs["pixels"].shape == (100, 8, 8, 1)
    np.testing.assert_array_equal(ds.inputs["pixels"][..., 0], x[:100])
    np.testing.assert_array_equal(ds.labels, y[:100])
    assert any("no channel dim; added a trailing channel of 1" in w for w in ds.warnings)
    s = ds.summary
    assert (s.format, s.n_available, s.n_selected, s.sampling) == ("npz", 100, 100, "all")
    assert s.inputs["pixels"].max == x[:100].max() and s.inputs["pixels"].shape == (100, 8, 8, 1)
    json.dumps(s.to_dict())  # JSON-friendly for manifest.json
    assert s.to_dict()["class_counts"]["3"] == int((y[:100] == 3).sum())


def test_npz_multi_input_uses_keys_named_after_inputs(tmp_path):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(30, 4)), rng.integers(0, 100, size=(30, 2, 2))
    path = tmp_path / "m.npz"
    np.savez_compressed(path, a=a, b=b, y=np.arange(30) % 3)
    specs = [InputSpec("a", "float32", (None, 4)), InputSpec("b", "int32", (None, 2, 2))]
    ds = _assert_stream_matches(path, specs, LoadOptions(samples=12, seed=3))
    assert ds.inputs["b"].dtype == np.int32 and ds.inputs["a"].shape == (12, 4)
    assert ds.summary.sampling == "stratified" and ds.summary.class_counts == {"0": 4, "1": 4, "2": 4}
    assert all(any(np.allclose(r, row) for row in a.astype(np.float32)) for r in ds.inputs["a"])


def test_npy_is_memory_mapped_and_streams_like_load(tmp_path, digits):
    x, _ = digits
    path = tmp_path / "x.npy"
    np.save(path, x[:200].reshape(-1, 8, 8, 1).astype(np.float32))
    ds = _assert_stream_matches(path, [PIXELS], LoadOptions(samples=50, seed=7))
    assert ds.labels is None and ds.summary.sampling == "random" and len(ds) == 50


def test_npz_streams_in_blocks_with_a_sampled_selection(tmp_path, monkeypatch):
    """Tiny read blocks force the chunked zip reader across many block boundaries."""
    monkeypatch.setattr(npz_reader, "CHUNK_BYTES", 64 * 3)  # 3 rows of 16 float32 per block
    x = np.arange(97 * 16, dtype=np.float32).reshape(97, 16)
    path = tmp_path / "big.npz"
    np.savez_compressed(path, x=x)
    spec = [InputSpec("v", "float32", (None, 16))]
    ds = _assert_stream_matches(path, spec, LoadOptions(samples=40, seed=11))
    rows = (ds.inputs["v"][:, 0] // 16).astype(int)
    assert np.all(np.diff(rows) > 0)  # source order, no duplicates
    np.testing.assert_array_equal(ds.inputs["v"], x[rows])
    np.testing.assert_array_equal(_assert_stream_matches(path, spec, ALL).inputs["v"], x)


def test_image_folder_with_classes(tmp_path, digits):
    x, y = digits
    pick = np.concatenate([np.flatnonzero(y == c)[:6] for c in (0, 1, 7)])
    _write_pngs(tmp_path / "imgs", x[pick], y[pick])
    ds = _assert_stream_matches(tmp_path / "imgs", [PIXELS], ALL)
    assert ds.class_names == ("class_0", "class_1", "class_7")
    np.testing.assert_array_equal(ds.labels, np.repeat([0, 1, 2], 6))
    np.testing.assert_array_equal(ds.inputs["pixels"][..., 0], x[pick])  # PNG is lossless, 0..255 kept
    assert ds.summary.class_counts == {"class_0": 6, "class_1": 6, "class_7": 6}


def test_flat_image_folder_resized_to_rgb_uint8(tmp_path, digits):
    x, _ = digits
    _write_pngs(tmp_path / "flat", x[:5])
    spec = InputSpec("image", "uint8", (1, 16, 16, 3))
    ds = load(tmp_path / "flat", [spec], ALL)
    img = ds.inputs["image"]
    assert img.shape == (5, 16, 16, 3) and img.dtype == np.uint8 and ds.labels is None
    np.testing.assert_array_equal(img[..., 0], img[..., 2])  # grey expanded to RGB
    assert abs(float(img.mean()) - float(x[:5].mean())) < 8  # bilinear resize keeps the brightness


def test_csv_with_label_column_and_string_classes(tmp_path, digits):
    x, y = digits
    path = tmp_path / "t.csv"
    names = np.array(["zero", "one", "two"])
    keep = np.flatnonzero(y < 3)[:30]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([f"p{i}" for i in range(64)] + ["digit"])
        for i in keep:
            w.writerow([*x[i].ravel().tolist(), names[y[i]]])
    ds = _assert_stream_matches(path, [PIXELS], LoadOptions(samples=None, label_key="digit"))
    assert ds.class_names == ("one", "two", "zero")
    np.testing.assert_array_equal(ds.inputs["pixels"].reshape(-1, 64), x[keep].reshape(-1, 64))
    assert [ds.class_names[i] for i in ds.labels] == names[y[keep]].tolist()


def test_csv_columns_split_across_inputs_in_spec_order(tmp_path):
    path = tmp_path / "two.csv"
    path.write_text("a1,a2,b1,b2,b3,b4,label\n1,2,3,4,5,6,0\n7,8,9,10,11,12,1\n")
    specs = [InputSpec("a", "float32", (None, 2)), InputSpec("b", "int8", (None, 2, 2))]
    ds = load(path, specs, LoadOptions(samples=None, label_key="label"))
    np.testing.assert_array_equal(ds.inputs["a"], [[1, 2], [7, 8]])
    np.testing.assert_array_equal(ds.inputs["b"][1], [[9, 10], [11, 12]])
    assert ds.inputs["b"].dtype == np.int8


@pytest.fixture(scope="module")
def tfrecords(tmp_path_factory, digits):
    """Two TFRecord files: float_list pixels + int64 label, and encoded PNG bytes + int64 label."""
    from PIL import Image

    tf = import_tf()
    x, y = digits
    root = tmp_path_factory.mktemp("tfr")
    floats, pngs = root / "floats.tfrecord", root / "png.tfr"
    with tf.io.TFRecordWriter(str(floats)) as wf, tf.io.TFRecordWriter(str(pngs)) as wp:
        for i in range(40):
            label = tf.train.Feature(int64_list=tf.train.Int64List(value=[int(y[i])]))
            vals = tf.train.Feature(float_list=tf.train.FloatList(value=x[i].ravel().astype(float).tolist()))
            wf.write(
                tf.train.Example(
                    features=tf.train.Features(feature={"pixels": vals, "label": label})
                ).SerializeToString()
            )
            buf = io.BytesIO()
            Image.fromarray(x[i], mode="L").save(buf, format="PNG")
            img = tf.train.Feature(bytes_list=tf.train.BytesList(value=[buf.getvalue()]))
            wp.write(
                tf.train.Example(
                    features=tf.train.Features(feature={"image/encoded": img, "label": label})
                ).SerializeToString()
            )
    return floats, pngs, x[:40], y[:40]


def test_tfrecord_float_list(tfrecords):
    floats, _, x, y = tfrecords
    ds = _assert_stream_matches(floats, [PIXELS], LoadOptions(samples=None, label_key="label"))
    np.testing.assert_array_equal(ds.inputs["pixels"][..., 0], x)
    np.testing.assert_array_equal(ds.labels, y)
    assert ds.summary.format == "tfrecord"


def test_tfrecord_encoded_png_bytes_with_feature_key(tfrecords):
    _, pngs, x, y = tfrecords
    opts = LoadOptions(samples=20, seed=2, feature_key="image/encoded", label_key="label")
    ds = _assert_stream_matches(pngs, [InputSpec("img", "uint8", (None, 8, 8, 1))], opts)
    assert ds.inputs["img"].dtype == np.uint8 and len(ds) == 20
    for img, label in zip(ds.inputs["img"], ds.labels):
        assert any(np.array_equal(img[..., 0], x[i]) and y[i] == label for i in range(len(x)))


def test_tfrecord_missing_feature_lists_what_exists(tfrecords):
    floats, *_ = tfrecords
    msg = _error(floats, [PIXELS], LoadOptions(samples=None, feature_key="nope", label_key="lbl"))
    assert "has no feature for input 'pixels': expected 'nope'; features found: label, pixels" in msg
    assert "label feature 'lbl' is missing from 40 of 40 records" in msg


# ---------------------------------------------------------------- sampling


def test_sampling_is_deterministic_per_seed():
    labels = np.repeat(np.arange(4), 25)
    a = select(100, labels, LoadOptions(samples=10, seed=5)).indices
    b = select(100, labels, LoadOptions(samples=10, seed=5)).indices
    c = select(100, labels, LoadOptions(samples=10, seed=6)).indices
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    r = select(100, None, LoadOptions(samples=10, seed=5, sampling="random")).indices
    assert len(set(r.tolist())) == 10 and np.all(np.diff(r) > 0)
    np.testing.assert_array_equal(
        select(100, labels, LoadOptions(samples=5, sampling=Sampling.FIRST)).indices, np.arange(5)
    )


def test_stratified_is_proportional_and_covers_every_class():
    labels = np.repeat([0, 1, 2], [600, 300, 100])
    idx = select(1000, labels, LoadOptions(samples=20, seed=0)).indices
    np.testing.assert_array_equal(np.bincount(labels[idx]), [12, 6, 2])
    skewed = np.repeat([0, 1, 2], [97, 2, 1])
    idx = select(100, skewed, LoadOptions(samples=10, seed=0, sampling="stratified")).indices
    assert np.bincount(skewed[idx]).tolist() == [8, 1, 1]
    rng = np.random.default_rng(0)
    assert stratified_counts(np.array([5, 5, 5, 5]), 2, rng).sum() == 2  # fewer samples than classes


def test_fewer_samples_than_asked_is_a_warning(tmp_path):
    path = tmp_path / "s.npz"
    np.savez(path, x=np.zeros((360, 8, 8, 1), np.float32))
    ds = load(path, [PIXELS], LoadOptions(samples=500))
    assert len(ds) == 360
    assert "asked for 500 samples, source has 360; using all 360" in ds.warnings


def test_stratified_without_labels_and_required_labels_are_errors(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.zeros((10, 8, 8, 1), np.float32))
    msg = _error(path, [PIXELS], LoadOptions(samples=5, sampling="stratified", require_labels=True))
    assert "labels are required but x.npy has none" in msg
    assert "sampling 'stratified' needs class labels, but the source has none" in msg


# ---------------------------------------------------------------- validation


def test_shape_mismatch_names_expected_and_found(tmp_path):
    path = tmp_path / "s.npz"
    np.savez(path, x=np.zeros((10, 7, 7, 1), np.float32))
    assert "input 'pixels': expected shape (any, 8, 8, 1), found (10, 7, 7, 1)" in _error(path, [PIXELS])


def test_unsafe_casts_into_integer_inputs(tmp_path):
    spec = [InputSpec("q", "uint8", (None, 3))]
    frac, wide = tmp_path / "f.npz", tmp_path / "w.npz"
    np.savez(frac, x=np.array([[0.5, 1, 2], [3, 4, 5]]))
    np.savez(wide, x=np.array([[-5, 1, 2], [3, 4, 300]]))
    assert "1 values have a fractional part (e.g. 0.5) but the model input is uint8" in _error(frac, spec)
    assert "values range -5..300, outside the uint8 range 0..255" in _error(wide, spec)


def test_safe_casts_pass(tmp_path):
    path = tmp_path / "ok.npz"
    data = np.arange(12, dtype=np.uint8).reshape(4, 3) * 20
    np.savez(path, x=data)
    ds = load(path, [InputSpec("q", "uint8", (None, 3))], ALL)
    assert ds.inputs["q"].dtype == np.uint8
    np.testing.assert_array_equal(ds.inputs["q"], data)
    np.savez(path, x=data.astype(np.float64))  # whole-number floats into a wider int type are safe
    ds = load(path, [InputSpec("q", "int16", (None, 3))], ALL)
    np.testing.assert_array_equal(ds.inputs["q"], data)


def test_nan_and_inf_are_counted(tmp_path):
    x = np.zeros((5, 8, 8, 1), np.float32)
    x[0, 0, 0, 0] = x[0, 1, 1, 0] = x[3, 2, 2, 0] = np.nan
    x[4, 0, 0, 0] = np.inf
    path = tmp_path / "n.npz"
    np.savez(path, x=x)
    assert "input 'pixels': 3 NaN and 1 Inf values in 3 of 5 samples" in _error(path, [PIXELS])


def test_structural_errors(tmp_path):
    assert "calibration data not found" in _error(tmp_path / "missing.npz", [PIXELS])
    (tmp_path / "d.txt").write_text("1,2")
    msg = _error(tmp_path / "d.txt", [PIXELS])
    assert "unsupported data format for d.txt (extension '.txt'); supported: .npz, .npy, .csv" in msg
    empty = tmp_path / "e.npz"
    np.savez(empty, x=np.zeros((0, 8, 8, 1), np.float32))
    assert "e.npz holds no samples (empty data)" in _error(empty, [PIXELS])
    keys = tmp_path / "k.npz"
    np.savez(keys, a=np.zeros((2, 1)), y=np.zeros(2))
    specs = [InputSpec("left", "float32", (None, 1)), InputSpec("right", "float32", (None, 1))]
    assert (
        "k.npz is missing arrays for inputs 'left', 'right': expected keys 'left', 'right' (one per model "
        "input); keys found: 'a', 'y'"
    ) in _error(keys, specs)
    assert "expected key 'pixels' or 'x'; keys found: 'a', 'y'" in _error(keys, [PIXELS])


def test_several_problems_are_reported_together(tmp_path):
    b = np.ones((10, 2), np.float32)
    b[2, 1] = np.nan
    path = tmp_path / "bad.npz"
    np.savez(path, a=np.zeros((10, 5)), b=b, y=np.zeros(9))
    specs = [InputSpec("a", "float32", (None, 4)), InputSpec("b", "float32", (None, 2))]
    with pytest.raises(CalibrationError) as info:
        load(path, specs, ALL)
    msg = str(info.value)
    assert isinstance(info.value, DataError) and info.value.exit_code == 2
    assert "(3 problems)" in msg
    assert "- labels: 9 labels for 10 input samples" in msg
    assert "- input 'a': expected shape (any, 4), found (10, 5)" in msg
    assert "- input 'b': 1 NaN and 0 Inf values in 1 of 10 samples" in msg


def test_csv_bad_rows_and_column_count(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("a,b,c\n1,2,3\n4,x,6\n7,8\n")
    msg = _error(path, [InputSpec("v", "float32", (None, 4))], LoadOptions(samples=None, label_key="lab"))
    assert "label column 'lab' not in bad.csv; columns found: a, b, c" in msg
    assert "1 rows of bad.csv do not have the header's 3 columns (line 4 has 2)" in msg
    assert "1 rows of bad.csv have non-numeric features (line 3, column 'b': 'x')" in msg
    assert "input 'v': expected shape (any, 4) = 4 values per sample, found 3 values per sample" in msg


# ---------------------------------------------------------------- consumers


def test_representative_dataset_yields_one_sample_per_step_keyed_by_input_name(tmp_path):
    path = tmp_path / "m.npz"
    np.savez(path, b=np.arange(6, dtype=np.int64).reshape(3, 2), a=np.ones((3, 8, 8, 1)))
    specs = [InputSpec("b", "int32", (None, 2)), InputSpec("a", "float32", PIXELS.shape)]
    ds = load(path, specs, ALL)
    steps = list(ds.representative_dataset()())
    assert len(steps) == 3
    for i, step in enumerate(steps):
        assert sorted(step) == ["a", "b"]
        a, b = step["a"], step["b"]
        assert b.dtype == np.int32 and b.shape == (1, 2) and b.tolist() == [[2 * i, 2 * i + 1]]
        assert a.dtype == np.float32 and a.shape == (1, 8, 8, 1)
    assert [len(batch["a"]) for batch in ds.batches(2)] == [2, 1]


def test_stream_reports_counts_before_reading(tmp_path, digits):
    x, y = digits
    path = tmp_path / "d.npz"
    np.savez(path, x=x.reshape(-1, 8, 8, 1), y=y)
    stream = calibration.SourceStream(path, [PIXELS], LoadOptions(samples=None), batch_size=500)
    assert (stream.n_available, len(stream)) == (len(x), len(x))
    sizes = [len(b[0]["pixels"]) for b in stream]
    assert sizes == [500, 500, 500, len(x) - 1500]
    assert sum(len(b[1]) for b in stream) == len(x)  # iterable again


def test_one_tensor_spec_type_judged_only_as_a_calibration_input(tmp_path):
    assert InputSpec is TensorSpec is signatures.TensorSpec and not hasattr(signatures, "TensorInfo")
    spec = TensorSpec("x", np.float32, [-1, 8, 8, 1])  # normalised: numpy's dtype name, a tuple, None dims
    assert (spec.dtype, spec.shape, spec.sample_shape) == ("float32", (None, 8, 8, 1), (8, 8, 1))
    text, free = TensorSpec("t", "bytes_", (None,)), TensorSpec("o", "float32", None)  # outputs may be so
    assert (text.dtype, free.to_dict()) == ("string", {"name": "o", "dtype": "float32", "shape": None})
    path = tmp_path / "d.npz"
    np.savez(path, x=np.zeros((2, 8, 8, 1), np.float32))
    for bad, why in [
        (text, "input 't': dtype string is not numeric"),
        (free, "shape must be a tuple of ints/None"),
        (TensorSpec("", "float32", ()), "input name must be a non-empty string, got ''"),
    ]:
        for refuse in (lambda bad=bad: calibration.specs_from([bad]), lambda bad=bad: load(path, [bad], ALL)):
            with pytest.raises(UsageError) as info:
                refuse()
            assert str(info.value).startswith("invalid input spec:\n- ") and why in str(info.value)
    assert "shape must include the batch dim, got ()" in str(
        pytest.raises(UsageError, load, path, [TensorSpec("x", "f4", ())], ALL).value
    )


def test_edge_tool_errors_are_the_calibration_errors():
    assert (et.EdgeToolError, et.UsageError, et.DataError) == (cal.EdgeToolError, cal.UsageError, cal.DataError)
    assert issubclass(CalibrationError, et.DataError) and CalibrationError("m").exit_code == 2
    assert et.collect_and_raise is cal.collect_and_raise


def test_import_does_not_load_tensorflow():
    code = (
        "import sys, edge_tool.calibration as c; [getattr(c, n) for n in c.__all__]; print('tensorflow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
