"""edgetool's TFLite against the peer a user would pick instead: ONNX Runtime, on the same model, inputs and machine.

MobileNetV2-224 (tf_keras, weights=None, seed 0) as a SavedModel. edgetool: ``convert`` fp32 and full-int8
(64 calibration samples), latency with LiteRT. Peer: ``tf2onnx`` (opset 17) → fp32 ONNX; ``onnxruntime``'s
``quant_pre_process`` + ``quantize_static`` (QDQ, per-channel, uint8 activations / int8 weights — ORT's
recommendation for CNNs on x86) on the same 64 samples → int8 ONNX; latency with an ``InferenceSession``.

Every latency is batch 1 in a fresh process that loads only its runtime (LiteRT or ORT), ``--runs`` timed calls
after warm-up, at 1 and 2 threads; the two runtimes alternate for ``--rounds`` rounds and the table gives the
median of the per-round p50s. Conversion / quantization wall times are medians over ``--rounds`` too.
Writes the ``peer`` section of benchmarks/RESULTS.md.

Needs the optional extra: ``pip install -e ".[peer]"`` (tf2onnx, onnxruntime; protobuf stays < 6 for TF 2.19).
Usage: .venv/bin/python benchmarks/bench_peer.py [--rounds 3] [--runs 50]
"""

from __future__ import annotations

import argparse
import json
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from edge_tool.core.env import import_tf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # _results also when imported (bench_ortweb.py)

from _results import write_section
from peer_latency import litert_p50, ort_p50
from peer_report import section

CAL_SAMPLES = 64


def build(tmp: Path) -> tuple[Path, np.ndarray]:
    """The SavedModel and 64 seeded calibration inputs in MobileNetV2's [-1, 1] range."""
    import_tf()
    import tf_keras

    tf_keras.utils.set_random_seed(0)
    model = tf_keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3), classes=1000)
    saved = tmp / "mobilenetv2"
    model.save(str(saved), save_format="tf", include_optimizer=False)
    x = np.random.default_rng(0).uniform(-1, 1, (CAL_SAMPLES, 224, 224, 3)).astype(np.float32)
    np.savez(tmp / "cal.npz", x=x)
    return saved, x


def int8_breakdown(saved: Path, cal: Path, out: Path) -> dict:
    """Where edgetool's in-process int8 time goes (one cProfile'd ``edgetool convert --quant int8``): seconds in
    TensorFlow's calibrator feeding samples, in quantizing the calibrated model, and in the MLIR conversion."""
    prof = out.with_suffix(".prof")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cProfile",
            "-o",
            str(prof),
            "-m",
            "edge_tool",
            "convert",
            str(saved),
            "--quant",
            "int8",
            "--calibration",
            str(cal),
            "--samples",
            str(CAL_SAMPLES),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    stats = pstats.Stats(str(prof)).stats  # {(file, line, name): (cc, nc, tt, ct, callers)}

    def cum(name: str, file_part: str = "") -> tuple[float, int]:
        hits = [
            (v[3], v[1]) for k, v in stats.items() if (k[2] == name or k[2].endswith(f".{name}>")) and file_part in k[0]
        ]  # builtins: "<built-in …>"
        return (max(h[0] for h in hits), max(h[1] for h in hits)) if hits else (0.0, 0)

    feed, calls = cum("FeedTensor")
    convert_all, _ = cum("_convert_and_export_metrics", "lite.py")
    quantize, _ = cum("_quantize", "converter.py")
    return {
        "feed": feed,
        "feeds": calls,
        "quantize": max(quantize - feed, 0.0),
        "mlir": max(convert_all - quantize, 0.0),
    }


def edgetool_convert(saved: Path, cal: Path, out: Path, mode: str) -> tuple[Path, float, float]:
    """edgetool's convert in a fresh process, like a user's run → (.tflite, command wall s, in-process mode s)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "edge_tool",
            "convert",
            str(saved),
            "--quant",
            mode,
            "--calibration",
            str(cal),
            "--samples",
            str(CAL_SAMPLES),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(proc.stdout + proc.stderr)
    manifest = json.loads((out / "manifest.json").read_text())
    art = next(a for a in manifest["artifacts"] if a["quant"] == mode)
    return out / art["path"], wall, float(art["seconds"])


_ORT_QUANTIZE = r"""
import sys, time, numpy as np
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process
src, dst, cal = sys.argv[1], sys.argv[2], sys.argv[3]
import onnx
name = onnx.load(src).graph.input[0].name
x = np.load(cal)["x"]
class Reader(CalibrationDataReader):
    def __init__(self): self.it = iter(x[i:i + 1] for i in range(len(x)))
    def get_next(self):
        v = next(self.it, None); return None if v is None else {name: v}
t0 = time.perf_counter()
quant_pre_process(src, dst + ".pre.onnx")
quantize_static(dst + ".pre.onnx", dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
print(time.perf_counter() - t0)
"""


def ort_models(saved: Path, cal: Path, out: Path) -> tuple[Path, Path, float, float, float]:
    """(fp32 onnx, int8 onnx, tf2onnx s, quantization wall s incl. process start, in-process quantization s)."""
    out.mkdir(parents=True, exist_ok=True)
    fp32, int8 = out / "mobilenetv2.onnx", out / "mobilenetv2_int8.onnx"
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tf2onnx.convert", "--saved-model", str(saved), "--opset", "17", "--output", str(fp32)],
        check=True,
        capture_output=True,
    )
    t1 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _ORT_QUANTIZE, str(fp32), str(int8), str(cal)],
        check=True,
        capture_output=True,
        text=True,
    )
    return fp32, int8, t1 - t0, time.perf_counter() - t1, float(proc.stdout.strip().splitlines()[-1])


def agreement(tflite: Path, onnx_path: Path, saved_probs: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    """Top-1 agreement of each quantized model with the float SavedModel on the calibration inputs."""
    import onnxruntime as ort
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(tflite))
    it.allocate_tensors()
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    (si, zi), (so, zo) = inp["quantization"], out["quantization"]
    lite = []
    for i in range(len(x)):
        sample = x[i : i + 1]
        if inp["dtype"] != np.float32:  # integer I/O: quantize with the file's own scale / zero point
            info = np.iinfo(inp["dtype"])
            sample = np.clip(np.round(sample / si + zi), info.min, info.max)
        it.set_tensor(inp["index"], sample.astype(inp["dtype"]))
        it.invoke()
        y = it.get_tensor(out["index"])
        lite.append((y.astype(np.float32) - zo) * so if y.dtype != np.float32 else y)
    lite = np.concatenate(lite)
    sess = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    onnx_out = np.concatenate([sess.run(None, {name: x[i : i + 1]})[0] for i in range(len(x))])
    ref = saved_probs.argmax(1)
    return float((lite.reshape(len(x), -1).argmax(1) == ref).mean()), float((onnx_out.argmax(1) == ref).mean())


def main() -> None:
    """Build once, convert/quantize and time both toolchains in alternating rounds, print and record."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-peer-") as tmp:
        tmp = Path(tmp)
        saved, x = build(tmp)
        cal, sample = tmp / "cal.npz", tmp / "sample.npy"
        np.save(sample, x[:1])
        times = {k: [] for k in ("et int8 wall", "et int8", "et fp32 wall", "ort quant wall", "ort quant", "tf2onnx")}
        lat: dict[tuple[str, int], list[float]] = {}
        for r in range(args.rounds):
            fp32_tfl, t_fp32, _ = edgetool_convert(saved, cal, tmp / f"et{r}-fp32", "fp32")
            int8_tfl, t_int8_wall, t_int8 = edgetool_convert(saved, cal, tmp / f"et{r}-int8", "int8")
            fp32_onnx, int8_onnx, t_tf2onnx, t_quant_wall, t_quant = ort_models(saved, cal, tmp / f"ort{r}")
            for key, value in (
                ("et int8 wall", t_int8_wall),
                ("et int8", t_int8),
                ("et fp32 wall", t_fp32),
                ("ort quant wall", t_quant_wall),
                ("ort quant", t_quant),
                ("tf2onnx", t_tf2onnx),
            ):
                times[key].append(value)
            for threads in (1, 2):
                for name, p50, model in (
                    ("LiteRT fp32", litert_p50, fp32_tfl),
                    ("ORT fp32", ort_p50, fp32_onnx),
                    ("LiteRT int8", litert_p50, int8_tfl),
                    ("ORT int8", ort_p50, int8_onnx),
                ):
                    lat.setdefault((name, threads), []).append(p50(model, sample, threads, args.runs))
        split = int8_breakdown(saved, tmp / "cal.npz", tmp / "breakdown")
        import tensorflow as tf

        probs = tf.saved_model.load(str(saved)).signatures["serving_default"](tf.constant(x))
        probs = next(iter(probs.values())).numpy()
        agree_lite, agree_ort = agreement(int8_tfl, int8_onnx, probs, x)
    body = section(lat, times, split, (agree_lite, agree_ort), args.rounds, args.runs, CAL_SAMPLES)
    print(body)
    write_section("peer", body)


if __name__ == "__main__":
    main()
