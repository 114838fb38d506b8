"""The model zoo: small but realistic models of the shapes users bring, each briefly trained on real or learnable data.

One builder per model; each writes, like ``edgetool train`` does, a SavedModel directory holding ``labels.txt``,
``calibration.npz`` (200 seeded training samples), ``eval.npz`` (held-out), ``train.npz`` (the training split) and
``zoo.json`` (what was built, held-out accuracy). Multi-input models store one array per input, named after it.

Keras-2 models use tf_keras (``TF_USE_LEGACY_KERAS=1``); ``keras3_export`` uses Keras 3 and ``model.export()``.
Build one model in a fresh process (Keras 2 and 3 cannot share one): ``python -m benchmarks.zoo.models NAME OUT``,
or call :func:`build` which does that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.zoo import data as zdata

SEED = 0
CALIBRATION_SAMPLES = 200
REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ModelSpec:
    """A zoo entry: builder name, Keras flavour, and what the benchmark must know about the model."""

    name: str
    about: str
    keras3: bool = False
    recurrent: bool = False  # LSTM/GRU: fixed batch (convert --batch 1) and state reset per sample
    dynamic_hw: bool = False


SPECS = {s.name: s for s in (
    ModelSpec("mobilenet_v2", "keras.applications.MobileNetV2 (alpha 0.35, 32×32 RGB upscaled digits)"),
    ModelSpec("mobilenet_v3_small", "keras.applications.MobileNetV3Small (hard-swish TF-op layers, 32×32 RGB)"),
    ModelSpec("efficientnet_b0", "keras.applications.EfficientNetB0 (Rescaling → Normalization → conv, 32×32 RGB)"),
    ModelSpec("resnet_bn", "residual CNN, Conv → BN → ReLU with Add skips, on 8×8 digits"),
    ModelSpec("tfop_uint8", "uint8 input, tf.cast and tf.image.resize TF-op layers, CNN"),
    ModelSpec("bn_after_act", "Conv → ReLU → BatchNorm, SeparableConv2D, DepthwiseConv2D"),
    ModelSpec("embedding_lstm", "Embedding + LSTM over 64 pixel tokens (int32 ids)", recurrent=True),
    ModelSpec("bilstm_gru", "Bidirectional LSTM + GRU over 8 rows of 8 pixels", recurrent=True),
    ModelSpec("transformer", "Transformer encoder block (MultiHeadAttention, LayerNorm, FFN) over 8 rows"),
    ModelSpec("conv1d_audio", "Conv1D classifier of 256-sample noisy tones (4 frequency bands)"),
    ModelSpec("tabular_mlp", "MLP with an adapted Normalization layer on sklearn breast_cancer (30 features)"),
    ModelSpec("multi_input", "two inputs: image float32[N,8,8,1] and counts int32[N,8] (signature order ≠ model order)"),
    ModelSpec("multi_output", "two heads: digit softmax[N,10] and ink regression[N,1]"),
    ModelSpec("keras3_export", "Keras 3 CNN saved with model.export()", keras3=True),
    ModelSpec("tf_module", "plain tf.Module MLP trained with GradientTape, tf.saved_model.save"),
    ModelSpec("dynamic_hw", "CNN with input [N,?,?,1] and global pooling, trained on 16×16 digits", dynamic_hw=True),
)}


# ---------- shared helpers ----------

def _keras_module():
    if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
        import tf_keras as keras  # noqa: PLC0415
    else:
        import keras  # noqa: PLC0415
    return keras


def _keras():
    keras = _keras_module()
    keras.utils.set_random_seed(SEED)
    return keras


def _fit(model, split: zdata.Split, epochs: int, lr: float = 3e-3, batch: int = 32, y_train=None) -> None:
    keras = _keras_module()
    loss = "sparse_categorical_crossentropy"
    if isinstance(y_train, dict):
        loss = {name: ("mse" if y.dtype.kind == "f" else loss) for name, y in y_train.items()}
    model.compile(keras.optimizers.Adam(lr), loss=loss)
    model.fit(split.x_train, split.y_train if y_train is None else y_train, epochs=epochs, batch_size=batch,
              verbose=0, shuffle=True)
    _recalibrate_batchnorm(keras, model, split.x_train)


def _recalibrate_batchnorm(keras, model, x, passes: int = 3, batch: int = 64) -> None:
    """Re-estimate BatchNorm moving statistics on the trained weights (a few epochs leave them stale).

    keras.applications use momentum 0.99-0.999, so after ~200 steps the moving variance still remembers its
    initial 1.0 and held-out accuracy is at chance although training accuracy is high.
    """
    bns = [layer for layer in model.layers if isinstance(layer, keras.layers.BatchNormalization)]
    if not bns:
        return
    saved = [layer.momentum for layer in bns]
    for layer in bns:
        layer.momentum = 0.8
    n = len(next(iter(x.values()))) if isinstance(x, dict) else len(x)
    for _ in range(passes):
        for start in range(0, n, batch):
            model(zdata.take(x, slice(start, start + batch)), training=True)
    for layer, momentum in zip(bns, saved):
        layer.momentum = momentum


def _predict_classes(predict, x) -> np.ndarray:
    out = predict(x)
    if isinstance(out, dict):
        out = next(iter(out.values()))
    if isinstance(out, (list, tuple)):
        out = out[0]
    return np.asarray(out).argmax(-1)


def _write_sidecars(out: Path, split: zdata.Split, info: dict) -> None:
    rng = np.random.default_rng(SEED)
    n = len(split.y_train)
    idx = np.sort(rng.choice(n, size=min(CALIBRATION_SAMPLES, n), replace=False))

    def arrays(x, y):
        return {**(x if isinstance(x, dict) else {"x": x}), "y": y}

    np.savez(out / "calibration.npz", **arrays(zdata.take(split.x_train, idx), split.y_train[idx]))
    np.savez(out / "eval.npz", **arrays(split.x_eval, split.y_eval))
    np.savez(out / "train.npz", **arrays(split.x_train, split.y_train))
    (out / "labels.txt").write_text("\n".join(split.labels) + "\n")
    (out / "zoo.json").write_text(json.dumps(info, indent=2) + "\n")


def _finish_keras(model, out: Path, split: zdata.Split, name: str, keras3: bool = False) -> dict:
    accuracy = float((_predict_classes(lambda x: model.predict(x, verbose=0), split.x_eval) == split.y_eval).mean())
    if keras3:
        model.export(str(out))
    else:
        model.save(str(out), save_format="tf", include_optimizer=False)
    info = {"name": name, "about": SPECS[name].about, "eval_accuracy": round(accuracy, 4), "seed": SEED}
    _write_sidecars(out, split, info)
    return info


def _image_split(size: int, rgb: bool) -> zdata.Split:
    return zdata.map_split(zdata.digits(SEED), lambda x: zdata.upscale(x, size // 8, rgb))


def _classifier_head(keras, x, classes: int = 10, name: str = "probs"):
    return keras.layers.Dense(classes, activation="softmax", name=name)(x)


# ---------- builders (one per model) ----------

def build_mobilenet_v2(out: Path) -> dict:
    """keras.applications.MobileNetV2, alpha 0.35, random init, 32×32 RGB."""
    keras = _keras()
    split = _image_split(32, rgb=True)
    inp = keras.Input((32, 32, 3), name="image")
    x = keras.layers.Rescaling(1 / 127.5, offset=-1)(inp)
    base = keras.applications.MobileNetV2(input_tensor=x, alpha=0.35, weights=None, include_top=False, pooling="avg")
    model = keras.Model(inp, _classifier_head(keras, base.output))
    _fit(model, split, epochs=4)
    return _finish_keras(model, out, split, "mobilenet_v2")


def build_mobilenet_v3_small(out: Path) -> dict:
    """keras.applications.MobileNetV3Small (its own Rescaling and hard-swish), random init, 32×32 RGB."""
    keras = _keras()
    split = _image_split(32, rgb=True)
    model = keras.applications.MobileNetV3Small(input_shape=(32, 32, 3), alpha=0.75, weights=None, classes=10,
                                                dropout_rate=0.0, include_preprocessing=True)
    _fit(model, split, epochs=5)
    return _finish_keras(model, out, split, "mobilenet_v3_small")


def build_efficientnet_b0(out: Path) -> dict:
    """keras.applications.EfficientNetB0 (Rescaling → Normalization inside), random init, 32×32 RGB."""
    keras = _keras()
    split = _image_split(32, rgb=True)
    model = keras.applications.EfficientNetB0(input_shape=(32, 32, 3), weights=None, classes=10, drop_connect_rate=0.0)
    _fit(model, split, epochs=4)
    return _finish_keras(model, out, split, "efficientnet_b0")


def build_resnet_bn(out: Path) -> dict:
    """Two residual blocks, Conv → BN → ReLU, Add skips, on 8×8 digits."""
    keras = _keras()
    L = keras.layers
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="pixels")
    x = L.Rescaling(1 / 255)(inp)
    x = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, 3, padding="same", use_bias=False)(x)))
    for _ in range(2):
        y = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, 3, padding="same", use_bias=False)(x)))
        y = L.BatchNormalization()(L.Conv2D(16, 3, padding="same", use_bias=False)(y))
        x = L.ReLU()(L.Add()([x, y]))
    x = L.GlobalAveragePooling2D()(x)
    model = keras.Model(inp, _classifier_head(keras, x))
    _fit(model, split, epochs=6)
    return _finish_keras(model, out, split, "resnet_bn")


def build_tfop_uint8(out: Path) -> dict:
    """uint8 [N,8,8,1] input; tf.cast, division and tf.image.resize to 16×16 as TF-op layers; a small CNN."""
    import tensorflow as tf  # noqa: PLC0415

    keras = _keras()
    L = keras.layers
    split = zdata.map_split(zdata.digits(SEED), lambda x: x.astype(np.uint8))
    inp = keras.Input((8, 8, 1), dtype="uint8", name="image_u8")
    x = tf.cast(inp, tf.float32) / 255.0
    x = tf.image.resize(x, (16, 16))
    x = L.Conv2D(8, 3, activation="relu", padding="same")(x)
    x = L.MaxPooling2D()(x)
    x = L.Conv2D(16, 3, activation="relu", padding="same")(x)
    x = L.GlobalAveragePooling2D()(x)
    model = keras.Model(inp, _classifier_head(keras, x))
    _fit(model, split, epochs=8)
    return _finish_keras(model, out, split, "tfop_uint8")


def build_bn_after_act(out: Path) -> dict:
    """Conv → ReLU → BatchNorm (not foldable into the conv), SeparableConv2D, DepthwiseConv2D, on 8×8 digits."""
    keras = _keras()
    L = keras.layers
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="pixels")
    x = L.Rescaling(1 / 255)(inp)
    x = L.BatchNormalization()(L.Conv2D(16, 3, padding="same", activation="relu")(x))
    x = L.BatchNormalization()(L.SeparableConv2D(24, 3, padding="same", activation="relu")(x))
    x = L.BatchNormalization()(L.ReLU()(L.DepthwiseConv2D(3, padding="same")(x)))
    x = L.GlobalAveragePooling2D()(x)
    model = keras.Model(inp, _classifier_head(keras, x))
    _fit(model, split, epochs=8)
    return _finish_keras(model, out, split, "bn_after_act")


def build_embedding_lstm(out: Path) -> dict:
    """Embedding(17, 16) + LSTM(32) over the 64 pixel intensities (0..16) of a digit as int32 token ids."""
    keras = _keras()
    L = keras.layers
    split = zdata.map_split(zdata.digits(SEED), lambda x: (x.reshape(len(x), 64) * 16 / 255).round().astype(np.int32))
    inp = keras.Input((64,), dtype="int32", name="tokens")
    x = L.LSTM(32)(L.Embedding(17, 16)(inp))
    model = keras.Model(inp, _classifier_head(keras, x))
    _fit(model, split, epochs=6, lr=1e-2)
    return _finish_keras(model, out, split, "embedding_lstm")


def build_bilstm_gru(out: Path) -> dict:
    """Bidirectional LSTM(16) then GRU(16) over the 8 rows (8 pixels each) of a digit."""
    keras = _keras()
    L = keras.layers
    split = zdata.map_split(zdata.digits(SEED), lambda x: x.reshape(len(x), 8, 8))
    inp = keras.Input((8, 8), name="rows")
    x = L.Rescaling(1 / 255)(inp)
    x = L.Bidirectional(L.LSTM(16, return_sequences=True))(x)
    x = L.GRU(16)(x)
    model = keras.Model(inp, _classifier_head(keras, x))
    _fit(model, split, epochs=6, lr=1e-2)
    return _finish_keras(model, out, split, "bilstm_gru")


def build_transformer(out: Path) -> dict:
    """Conv1D token stem + one Transformer encoder block (2-head attention, LayerNorm, FFN) over 8 rows."""
    keras = _keras()
    L = keras.layers
    split = zdata.map_split(zdata.digits(SEED), lambda x: x.reshape(len(x), 8, 8))
    inp = keras.Input((8, 8), name="rows")
    x = L.Conv1D(32, 3, padding="same")(L.Rescaling(1 / 255)(inp))
    x = L.LayerNormalization()(L.Add()([x, L.MultiHeadAttention(num_heads=2, key_dim=16)(x, x)]))
    ffn = L.Dense(32)(L.Dense(64, activation="relu")(x))
    x = L.LayerNormalization()(L.Add()([x, ffn]))
    x = L.GlobalAveragePooling1D()(x)
    model = keras.Model(inp, _classifier_head(keras, x))
    _fit(model, split, epochs=6)
    return _finish_keras(model, out, split, "transformer")


def build_conv1d_audio(out: Path) -> dict:
    """Conv1D → MaxPool ×2 → global pooling on 256-sample noisy tones, 4 frequency bands."""
    keras = _keras()
    L = keras.layers
    split = zdata.tones(SEED)
    inp = keras.Input((256, 1), name="waveform")
    x = L.MaxPooling1D(4)(L.Conv1D(16, 9, padding="same", activation="relu")(inp))
    x = L.MaxPooling1D(4)(L.Conv1D(32, 5, padding="same", activation="relu")(x))
    x = L.GlobalAveragePooling1D()(L.Conv1D(32, 3, padding="same", activation="relu")(x))
    model = keras.Model(inp, _classifier_head(keras, x, classes=len(zdata.TONE_LABELS)))
    _fit(model, split, epochs=8)
    return _finish_keras(model, out, split, "conv1d_audio")


def build_tabular_mlp(out: Path) -> dict:
    """Normalization (adapted on the training split) → Dense(16) → softmax(2) on raw breast_cancer features."""
    keras = _keras()
    L = keras.layers
    split, _features = zdata.breast_cancer(SEED)
    norm = L.Normalization()
    norm.adapt(split.x_train)
    inp = keras.Input((30,), name="features")
    x = L.Dense(16, activation="relu")(norm(inp))
    model = keras.Model(inp, _classifier_head(keras, x, classes=2))
    _fit(model, split, epochs=15, lr=1e-2, batch=16)
    return _finish_keras(model, out, split, "tabular_mlp")


def build_multi_input(out: Path) -> dict:
    """image float32[N,8,8,1] (conv branch) and counts int32[N,8] (row sums, dense branch), concatenated.

    The signature lists inputs by name (counts, image), the model takes them as (image, counts): calibration that
    feeds inputs by position instead of by name breaks here.
    """
    import tensorflow as tf  # noqa: PLC0415

    keras = _keras()
    L = keras.layers
    base = zdata.digits(SEED)

    def inputs(x):
        return {"image": x, "counts": (x[..., 0].sum(axis=2) * 16 / 255).round().astype(np.int32)}

    split = zdata.Split(inputs(base.x_train), base.y_train, inputs(base.x_eval), base.y_eval, base.labels)
    image = keras.Input((8, 8, 1), name="image")
    counts = keras.Input((8,), dtype="int32", name="counts")
    a = L.Flatten()(L.Conv2D(8, 3, activation="relu")(L.Rescaling(1 / 255)(image)))
    b = L.Dense(16, activation="relu")(tf.cast(counts, tf.float32) / 128.0)
    x = L.Dense(32, activation="relu")(L.Concatenate()([a, b]))
    model = keras.Model([image, counts], _classifier_head(keras, x))
    _fit(model, split, epochs=6)
    return _finish_keras(model, out, split, "multi_input")


def build_multi_output(out: Path) -> dict:
    """A shared conv trunk with two heads: ``digit`` softmax[N,10] and ``ink`` (mean pixel / 255) regression[N,1]."""
    keras = _keras()
    L = keras.layers
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="pixels")
    x = L.Flatten()(L.Conv2D(16, 3, activation="relu")(L.Rescaling(1 / 255)(inp)))
    x = L.Dense(32, activation="relu")(x)
    model = keras.Model(inp, [_classifier_head(keras, x, name="digit"), L.Dense(1, name="ink")(x)])
    ink = (split.x_train.mean(axis=(1, 2, 3)) / 255).astype(np.float32)[:, None]
    _fit(model, split, epochs=6, y_train={"digit": split.y_train, "ink": ink})
    return _finish_keras(model, out, split, "multi_output")


def build_keras3_export(out: Path) -> dict:
    """A Keras 3 CNN exported with ``model.export()`` (a SavedModel that holds no Keras layers)."""
    keras = _keras()
    L = keras.layers
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="pixels")
    x = L.Flatten()(L.Conv2D(8, 3, activation="relu")(L.Rescaling(1 / 255)(inp)))
    model = keras.Model(inp, _classifier_head(keras, L.Dense(32, activation="relu")(x)))
    _fit(model, split, epochs=6)
    return _finish_keras(model, out, split, "keras3_export", keras3=True)


def build_tf_module(out: Path) -> dict:
    """A plain ``tf.Module`` MLP (tf.Variables, tf.function signature) trained with GradientTape and Adam."""
    import tensorflow as tf  # noqa: PLC0415

    keras = _keras()
    split = zdata.digits(SEED)

    class DigitsMLP(tf.Module):
        def __init__(self):
            super().__init__()
            g = tf.random.Generator.from_seed(SEED)
            self.w1 = tf.Variable(g.normal([64, 32]) * 0.2, name="w1")
            self.b1 = tf.Variable(tf.zeros([32]), name="b1")
            self.w2 = tf.Variable(g.normal([32, 10]) * 0.2, name="w2")
            self.b2 = tf.Variable(tf.zeros([10]), name="b2")

        def logits(self, pixels):
            h = tf.nn.relu(tf.reshape(pixels, [-1, 64]) / 255.0 @ self.w1 + self.b1)
            return h @ self.w2 + self.b2

        @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 1], tf.float32, name="pixels")])
        def serve(self, pixels):
            return {"probs": tf.nn.softmax(self.logits(pixels))}

    module = DigitsMLP()
    opt = keras.optimizers.Adam(1e-2)
    ds = tf.data.Dataset.from_tensor_slices((split.x_train, split.y_train)).shuffle(2000, seed=SEED).batch(32)
    for _ in range(15):
        for xb, yb in ds:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(yb, module.logits(xb)))
            opt.apply_gradients(zip(tape.gradient(loss, module.trainable_variables), module.trainable_variables))
    accuracy = float((_predict_classes(module.serve, split.x_eval) == split.y_eval).mean())
    tf.saved_model.save(module, str(out), signatures={"serving_default": module.serve.get_concrete_function()})
    info = {"name": "tf_module", "about": SPECS["tf_module"].about, "eval_accuracy": round(accuracy, 4), "seed": SEED}
    _write_sidecars(out, split, info)
    return info


def build_dynamic_hw(out: Path) -> dict:
    """Input [N,?,?,1], convs and global average pooling; trained and evaluated on 16×16 upscaled digits."""
    keras = _keras()
    L = keras.layers
    split = zdata.map_split(zdata.digits(SEED), lambda x: zdata.upscale(x, 2, rgb=False))
    inp = keras.Input((None, None, 1), name="image")
    x = L.Conv2D(16, 3, padding="same", activation="relu")(L.Rescaling(1 / 255)(inp))
    x = L.MaxPooling2D()(x)
    x = L.Conv2D(32, 3, padding="same", activation="relu")(x)
    x = L.GlobalMaxPooling2D()(x)
    model = keras.Model(inp, _classifier_head(keras, x))
    _fit(model, split, epochs=8)
    return _finish_keras(model, out, split, "dynamic_hw")


BUILDERS = {name: globals()[f"build_{name}"] for name in SPECS}


# ---------- building (each model in its own process) ----------

def source_hash(name: str) -> str:
    """Hash of this module's and data.py's bytes and ``name``: a cached build is redone when either file changes.

    (Whole files, not ``inspect.getsource``: a long run whose files are edited meanwhile would otherwise read shifted
    lines from linecache and disagree with a fresh process about which builds are current.)
    """
    import hashlib  # noqa: PLC0415

    digest = hashlib.sha256(Path(__file__).read_bytes() + Path(zdata.__file__).read_bytes())
    digest.update(name.encode())
    return digest.hexdigest()[:16]


def is_built(out: Path) -> bool:
    """True when ``out`` holds a complete build of the current source."""
    stamp = Path(out) / "zoo.json"
    if not stamp.is_file():
        return False
    info = json.loads(stamp.read_text())
    return info.get("name") in SPECS and info.get("source_hash") == source_hash(info["name"])


def build(name: str, out: Path, timeout: float = 900) -> dict:
    """Build model ``name`` into ``out`` (replaced) in a fresh Python process; return its zoo.json."""
    import shutil  # noqa: PLC0415

    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "0" if SPECS[name].keras3 else "1", "TF_CPP_MIN_LOG_LEVEL": "3",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]), "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, "-m", "benchmarks.zoo.models", name, str(out)], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"building {name} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads((out / "zoo.json").read_text())


def _main(argv: list[str]) -> None:
    name, out = argv[0], Path(argv[1])
    start = time.perf_counter()
    info = BUILDERS[name](out)
    info.update(build_seconds=round(time.perf_counter() - start, 1), source_hash=source_hash(name))
    (out / "zoo.json").write_text(json.dumps(info, indent=2) + "\n")
    print(json.dumps(info))


if __name__ == "__main__":
    _main(sys.argv[1:])
