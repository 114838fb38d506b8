"""Build one small seeded model of a given shape for the QAT comparison: ``python build.py NAME OUTROOT``.

Writes OUTROOT/NAME (Keras-2 SavedModel) with train.npz, eval.npz and calibration.npz beside it. Digits
(upsampled / tiled for the image models) or sklearn's breast_cancer / wine; BatchNorm momentum 0.9 so the
short training leaves usable inference statistics.
"""

import os
import sys

import numpy as np

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
import tf_keras as keras  # noqa: TID253  (a model-building script: it needs Keras from its first line)

from edge_tool.training.data import load_digits_split

keras.utils.set_random_seed(0)
name, root = sys.argv[1], sys.argv[2]
s = load_digits_split(0)
xtr, ytr, xev, yev = s.x_train, s.y_train, s.x_eval, s.y_eval
L = keras.layers


def up(x, k, ch):
    x = np.kron(x, np.ones((1, k, k, 1), np.float32))
    return np.repeat(x, ch, axis=-1) if ch > 1 else x


epochs = 6
if name == "tfop_uint8":
    from benchmarks.zoo.builders.vision import uint8_resize_cnn

    inp = keras.Input((8, 8, 1), dtype="uint8", name="image")
    x = uint8_resize_cnn(keras, inp, widths=(16, 32))
    out = L.Dense(10, activation="softmax")(x)
    m = keras.Model(inp, out)
    xtr, xev = xtr.astype("uint8"), xev.astype("uint8")
    epochs = 25
elif name == "bn_after_relu":
    xtr, xev = up(xtr, 2, 1), up(xev, 2, 1)
    inp = keras.Input((16, 16, 1), name="image")
    x = L.Rescaling(1 / 255)(inp)
    x = L.Conv2D(16, 3, padding="same")(x)
    x = L.ReLU()(x)
    x = L.BatchNormalization(momentum=0.9)(x)
    x = L.SeparableConv2D(32, 3, padding="same", strides=2)(x)
    x = L.ReLU()(x)
    x = L.BatchNormalization(momentum=0.9)(x)
    x = L.DepthwiseConv2D(3, padding="same")(x)
    x = L.BatchNormalization(momentum=0.9)(x)
    x = L.ReLU()(x)
    x = L.GlobalAveragePooling2D()(x)
    out = L.Dense(10, activation="softmax")(x)
    m = keras.Model(inp, out)
    epochs = 8
elif name == "dyn_hw":
    inp = keras.Input((None, None, 1), name="image")
    x = L.Rescaling(1 / 255)(inp)
    x = L.Conv2D(16, 3, padding="same", activation="relu")(x)
    x = L.BatchNormalization(momentum=0.9)(x)
    x = L.Conv2D(32, 3, padding="same", activation="relu")(x)
    x = L.GlobalAveragePooling2D()(x)
    out = L.Dense(10, activation="softmax")(x)
    m = keras.Model(inp, out)
    epochs = 10
elif name in ("mlp_cancer", "mlp_wine"):
    from sklearn.datasets import load_breast_cancer, load_wine
    from sklearn.model_selection import train_test_split

    d = load_breast_cancer() if name == "mlp_cancer" else load_wine()
    X, Y = d.data.astype("float32"), d.target.astype("int64")
    xtr, xev, ytr, yev = train_test_split(X, Y, test_size=0.3, random_state=0, stratify=Y)
    inp = keras.Input((X.shape[1],), name="features")
    norm = L.Normalization()
    norm.adapt(xtr)
    x = norm(inp)
    x = L.Dense(32, activation="relu")(x)
    x = L.Dense(16, activation="relu")(x)
    out = L.Dense(int(Y.max()) + 1, activation="softmax")(x)
    m = keras.Model(inp, out)
    epochs = 30
elif name == "resnet_bn":
    xtr, xev = up(xtr, 2, 1), up(xev, 2, 1)
    inp = keras.Input((16, 16, 1), name="image")
    x = L.Rescaling(1 / 255)(inp)
    x = L.Conv2D(16, 3, padding="same", use_bias=False)(x)
    x = L.BatchNormalization(momentum=0.9)(x)
    x = L.ReLU()(x)
    for f in (16, 32):
        y = L.Conv2D(f, 3, padding="same", use_bias=False)(x)
        y = L.BatchNormalization(momentum=0.9)(y)
        y = L.ReLU()(y)
        y = L.Conv2D(f, 3, padding="same", use_bias=False)(y)
        y = L.BatchNormalization(momentum=0.9)(y)
        sc = x if x.shape[-1] == f else L.Conv2D(f, 1, use_bias=False)(x)
        x = L.ReLU()(L.Add()([y, sc]))
    x = L.GlobalAveragePooling2D()(x)
    out = L.Dense(10, activation="softmax")(x)
    m = keras.Model(inp, out)
    epochs = 3
elif name == "mnv3":
    xtr, xev = up(xtr, 4, 3), up(xev, 4, 3)
    m = keras.applications.MobileNetV3Small(input_shape=(32, 32, 3), weights=None, classes=10, minimalistic=False)
    epochs = 6
elif name == "effnet":
    xtr, xev = up(xtr, 4, 3), up(xev, 4, 3)
    m = keras.applications.EfficientNetB0(input_shape=(32, 32, 3), weights=None, classes=10)
    epochs = 4
elif name == "lstm":
    xtr, xev = xtr[..., 0] / 255, xev[..., 0] / 255
    inp = keras.Input((8, 8), name="rows")
    x = L.LSTM(24)(inp)
    out = L.Dense(10, activation="softmax")(x)
    m = keras.Model(inp, out)
    epochs = 10
elif name == "multi_io":
    inp1 = keras.Input((8, 8, 1), name="image")
    inp2 = keras.Input((8,), name="rowsum")
    x = L.Rescaling(1 / 255)(inp1)
    x = L.Conv2D(16, 3, padding="same", activation="relu")(x)
    x = L.Flatten()(x)
    z = L.Concatenate()([x, L.Dense(8, activation="relu")(inp2)])
    z = L.Dense(32, activation="relu")(z)
    o1 = L.Dense(10, activation="softmax", name="digit")(z)
    o2 = L.Dense(2, activation="softmax", name="parity")(z)
    m = keras.Model([inp1, inp2], [o1, o2])

    def rs(x):
        return x.sum(axis=2)[..., 0] / 255 / 8

    m.compile("adam", ["sparse_categorical_crossentropy"] * 2, metrics=["accuracy"])
    m.fit([xtr, rs(xtr)], [ytr, ytr % 2], epochs=8, batch_size=32, verbose=0)
    print(m.evaluate([xev, rs(xev)], [yev, yev % 2], verbose=0))
    out = f"{root}/{name}"
    m.save(out, save_format="tf")
    np.savez(out + "/train.npz", image=xtr, rowsum=rs(xtr), digit=ytr, parity=ytr % 2)
    np.savez(out + "/eval.npz", image=xev, rowsum=rs(xev), digit=yev, parity=yev % 2)
    np.savez(out + "/calibration.npz", image=xtr[:200], rowsum=rs(xtr[:200]))
    sys.exit(0)
for layer in m.layers:
    if isinstance(layer, L.BatchNormalization):
        layer.momentum = 0.9
m.compile(keras.optimizers.Adam(1e-3), "sparse_categorical_crossentropy", metrics=["accuracy"])
m.fit(xtr, ytr, epochs=epochs, batch_size=32, verbose=0)
acc = m.evaluate(xev, yev, verbose=0)[1]
out = f"{root}/{name}"
m.save(out, save_format="tf")
iname = m.input_names[0]
np.savez(out + "/train.npz", x=xtr, y=ytr)
np.savez(out + "/eval.npz", x=xev, y=yev)
rng = np.random.default_rng(0)
idx = rng.choice(len(xtr), min(200, len(xtr)), replace=False)
np.savez(out + "/calibration.npz", x=xtr[idx], y=ytr[idx])
print(name, "float acc", acc)
