"""Streaming eval: running metrics equal the whole-array ones, data is read a batch at a time (tracemalloc and
/proc/self/smaps say so), the last short batch counts, and a bad sample deep in the data names its batch."""

from __future__ import annotations

import re
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from edge_tool.calibration.readers.npz import CHUNK_BYTES
from edge_tool.calibration.spec import TensorSpec
from edge_tool.core.env import import_tf
from edge_tool.errors import DataError
from edge_tool.evaluate import EvalConfig, metrics, run_eval
from edge_tool.evaluate.data import EvalStream
from tests.oracles.litert_outputs import litert_outputs

tf = import_tf()
SHAPE = (32, 32, 3)
CLASSES = 10
N = 4000


# ---------------------------------------------------------------- running metrics vs whole arrays


def _streamed(ref, out, labels, sizes, top_k):
    acc = metrics.DriftAccumulator(top_k)
    start = 0
    for size in sizes:
        stop = min(len(ref), start + size)
        acc.update(ref[start:stop], out[start:stop], None if labels is None else labels[start:stop])
        start = stop
    assert start == len(ref)
    return acc


@pytest.mark.parametrize("batch", [1, 7, 64, 1000])
def test_running_metrics_equal_whole_array_metrics(batch):
    rng = np.random.default_rng(batch)
    n = 301  # not divisible by any batch above but 1
    ref = rng.dirichlet(np.ones(CLASSES), n)
    out = ref + rng.normal(0, 0.02, ref.shape)
    out[5] = 0.0
    ref[5] = 0.0  # both zero: cosine 1 by definition
    out[:40] = out[:40, ::-1]  # disagreements
    labels = rng.integers(0, CLASSES, n)
    sizes = [batch] * -(-n // batch)
    for top_k in (5, CLASSES):  # top-k reported only with more classes than k
        acc = _streamed(ref, out, labels, sizes, top_k)
        whole = metrics.drift(ref, out)
        for name, value in acc.drift().items():
            if name in ("top1_agreement", "max_abs_error"):
                assert value == whole[name], name  # counts and maxima: exact
            else:
                assert value == pytest.approx(whole[name], rel=1e-12, abs=1e-15), name  # float64 sums
        assert acc.task.result() == metrics.task_metrics(out, labels, top_k)
        assert acc.count == n
    no_labels = _streamed(ref, out, None, sizes, 5)
    assert no_labels.task.result() == {"accuracy": None, "top_k_accuracy": None}


def test_batches_of_mixed_sizes_give_the_same_numbers():
    rng = np.random.default_rng(3)
    ref, out = rng.normal(size=(100, 4)), rng.normal(size=(100, 4))
    labels = rng.integers(0, 4, 100)
    a = _streamed(ref, out, labels, [100], 2)
    b = _streamed(ref, out, labels, [1, 2, 3, 50, 44], 2)
    assert a.drift() == pytest.approx(b.drift(), rel=1e-12)
    assert a.task.result() == b.task.result()


# ---------------------------------------------------------------- data read a batch at a time


@pytest.fixture(scope="module")
def big_npy(tmp_path_factory) -> Path:
    """N float32 samples of 32x32x3: 49 MB on disk, 62x a batch of 64."""
    path = tmp_path_factory.mktemp("stream") / "x.npy"
    mm = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(N, *SHAPE))
    for start in range(0, N, 250):
        mm[start : start + 250] = np.random.default_rng(start).uniform(0, 1, (250, *SHAPE))
    mm.flush()
    del mm
    return path


def _resident_kb_of(path: Path) -> int:
    """Resident kB of every mapping of ``path`` in this process (Linux /proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            inside = line.rstrip().endswith(str(path))
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


@pytest.mark.slow  # not in the quick tier (its measured cost)
@pytest.mark.parametrize("suffix", [".npy", ".npz"])
def test_source_is_consumed_in_batches_with_bounded_memory(big_npy, tmp_path, suffix):
    path = big_npy
    if suffix == ".npz":
        path = tmp_path / "x.npz"
        np.savez(path, x=np.load(big_npy), y=np.arange(N) % CLASSES)
    data_bytes = N * int(np.prod(SHAPE)) * 4
    batch_bytes = 64 * int(np.prod(SHAPE)) * 4
    stream = EvalStream(path, [TensorSpec("x", "float32", (None, *SHAPE))], batch_size=64)
    sizes, checksum, resident = [], 0.0, 0
    tracemalloc.start()
    try:
        for inputs, _ in stream.batches():
            sizes.append(len(inputs["x"]))
            checksum += float(inputs["x"][:, 0, 0, 0].sum())
            if suffix == ".npy":
                resident = max(resident, _resident_kb_of(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sizes == [64] * 62 + [32] and stream.consumed == N
    assert checksum == pytest.approx(float(np.load(big_npy, mmap_mode="r")[:, 0, 0, 0].sum(dtype=np.float64)))
    # a batch plus its float64 statistics temporaries (and, for .npz, the reader's ~4 MB zip blocks): a few
    # batches' worth, nowhere near the 63 batches of the whole file. tracemalloc also counts what other threads
    # left running by earlier tests allocate meanwhile (8.2 MB seen in the full suite, 10 batches = 7.9 MB), so
    # the bound is 12 batches (9.4 MB; with .npz's zip blocks still under half the file).
    bound = 12 * batch_bytes + (3 * CHUNK_BYTES if suffix == ".npz" else 0)
    assert peak < bound < data_bytes / 2, f"peak {peak / 1e6:.1f} MB for {data_bytes / 1e6:.1f} MB of data"
    # no file pages stay mapped: a memory map read end to end would put the whole file in the resident set
    assert resident * 1024 < 2 * batch_bytes, f"{resident} kB of {path.name} resident"
    stats = stream.details()["inputs"]["x"]
    whole = np.load(big_npy).astype(np.float64)
    assert stats["mean"] == pytest.approx(whole.mean(), rel=1e-9)
    assert stats["std"] == pytest.approx(whole.std(), rel=1e-9)
    assert (stats["min"], stats["max"], stats["shape"]) == (whole.min(), whole.max(), [N, *SHAPE])


def test_bad_sample_deep_in_the_data_names_its_batch(tmp_path):
    x = np.zeros((300, *SHAPE), np.float32)
    x[130, 1, 2, 0] = np.nan
    np.save(tmp_path / "x.npy", x)
    stream = EvalStream(tmp_path / "x.npy", [TensorSpec("x", "float32", (None, *SHAPE))], batch_size=64)
    seen = 0
    with pytest.raises(DataError, match=r"samples 128\.\.191") as err:
        for inputs, _ in stream.batches():
            seen += len(inputs["x"])
    assert seen == 128 and "NaN" in str(err.value)


# ---------------------------------------------------------------- run_eval end to end


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    """A softmax-of-a-linear-map SavedModel on 32x32x3, its fp32 and int8 .tflite, and 150 labelled samples."""
    d = tmp_path_factory.mktemp("tiny")

    class Tiny(tf.Module):
        def __init__(self):
            super().__init__()
            rng = np.random.default_rng(0)
            self.w = tf.Variable(rng.normal(0, 0.05, (int(np.prod(SHAPE)), CLASSES)).astype("float32"))

        @tf.function(input_signature=[tf.TensorSpec([None, *SHAPE], tf.float32, name="x")])
        def serve(self, x):
            return {"probs": tf.nn.softmax(tf.matmul(tf.reshape(x, [-1, int(np.prod(SHAPE))]), self.w))}

    m = Tiny()
    tf.saved_model.save(m, str(d / "sm"), signatures={"serving_default": m.serve})
    x = np.random.default_rng(1).uniform(0, 1, (150, *SHAPE)).astype(np.float32)
    y = np.random.default_rng(2).integers(0, CLASSES, 150)
    np.savez(d / "eval.npz", x=x, y=y)
    out = {"sm": d / "sm", "eval": d / "eval.npz", "x": x, "y": y}
    for mode in ("fp32", "int8"):
        conv = tf.lite.TFLiteConverter.from_saved_model(str(d / "sm"))
        if mode == "int8":
            conv.optimizations = [tf.lite.Optimize.DEFAULT]
            conv.representative_dataset = lambda: ([x[i : i + 1]] for i in range(50))
            conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        (d / f"{mode}.tflite").write_bytes(conv.convert())
        out[mode] = d / f"{mode}.tflite"
    return out


def _in_memory(tiny, path: Path) -> tuple[dict, dict, dict]:
    """Whole-array figures: reference in one call, LiteRT one sample at a time, metrics on full arrays."""
    x, y = tiny["x"], tiny["y"]
    fn = tf.saved_model.load(str(tiny["sm"])).signatures["serving_default"]
    ref = fn(x=tf.constant(x))["probs"].numpy().astype(np.float64)
    out = litert_outputs(path, x)
    return metrics.drift(ref, out), metrics.task_metrics(out, y, 5), metrics.task_metrics(ref, y, 5)


@pytest.mark.parametrize("batch", [7, 64, 500])
def test_run_eval_streaming_matches_in_memory_computation(tiny, batch):
    arts = (tiny["fp32"], tiny["int8"])
    report = run_eval(
        EvalConfig(
            artifacts=arts,
            reference=tiny["sm"],
            data=tiny["eval"],
            warmup=1,
            runs=3,
            latency_in_subprocess=False,
            batch_size=batch,
        )
    )
    assert report.data["samples"] == 150 and report.data["source"]["n_selected"] == 150
    for res, path in zip(report.results, arts):
        drift, task, ref_task = _in_memory(tiny, path)
        assert res.accuracy == task["accuracy"] and res.top_k_accuracy == task["top_k_accuracy"]
        assert report.reference.accuracy == ref_task["accuracy"]
        assert res.accuracy_drop == ref_task["accuracy"] - task["accuracy"]
        assert res.top1_agreement == drift["top1_agreement"]
        # the reference runs in batches of `batch` here, in one call there: float32 kernels may round differently
        assert res.max_abs_error == pytest.approx(drift["max_abs_error"], abs=1e-6)
        assert res.mean_abs_error == pytest.approx(drift["mean_abs_error"], abs=1e-7)
        assert res.cosine == pytest.approx(drift["cosine"], abs=1e-9)
    fp32, int8 = report.results
    # 149/150 measured with plain LiteRT; allow a few rounding flips across LiteRT releases, no more
    assert fp32.max_abs_error < 1e-5 and int8.top1_agreement >= 0.97


def test_run_eval_on_a_large_npy_holds_about_a_batch(tiny, big_npy):
    """tracemalloc sees every numpy buffer: the pass over 49 MB of data peaks at a small multiple of a batch."""
    run_eval(
        EvalConfig(
            artifacts=(tiny["fp32"],),
            reference=tiny["sm"],
            data=big_npy,
            warmup=1,
            runs=2,
            latency_in_subprocess=False,
            batch_size=64,
        )
    )  # warm: first-call allocations out of the way
    tracemalloc.start()
    try:
        report = run_eval(
            EvalConfig(
                artifacts=(tiny["fp32"],),
                reference=tiny["sm"],
                data=big_npy,
                warmup=1,
                runs=2,
                latency_in_subprocess=False,
                batch_size=64,
            )
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    data_bytes = big_npy.stat().st_size
    assert report.data["samples"] == N and report.results[0].accuracy is None
    assert peak < data_bytes / 3, f"peak {peak / 1e6:.1f} MB of traced allocations for {data_bytes / 1e6:.1f} MB"
