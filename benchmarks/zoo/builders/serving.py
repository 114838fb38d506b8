"""Zoo builders of what serving exports and older graphs look like: an image-bytes ``serving_default`` beside a
pixel signature, a tabular model of Keras preprocessing layers, string labels out of a StaticHashTable, a TF1
``tf.compat.v1`` graph (and a SavedModelBuilder one with batch-norm ref variables), and NMS inside the graph."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.zoo import data as zdata
from benchmarks.zoo.builders.common import SEED, fit, predict_classes, seeded_keras, write_sidecars
from benchmarks.zoo.builders.tasks import _placed

WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def _digits_cnn(keras, L, split, epochs: int = 6):
    """A small CNN over raw 8×8 digit pixels, trained (a Keras 2 model; callers wrap it in a tf.Module)."""
    inp = keras.Input((8, 8, 1), name="pixels")
    x = L.Flatten()(L.Conv2D(8, 3, activation="relu")(L.Rescaling(1 / 255)(inp)))
    model = keras.Model(inp, L.Dense(10, activation="softmax", name="probs")(L.Dense(32, activation="relu")(x)))
    fit(model, split, epochs)
    return model


def build_image_bytes(out: Path) -> dict:
    """TF-Serving style: ``serving_default`` takes PNG bytes (string[N]) and decodes + resizes inside;
    ``serving_pixels`` takes the float32[N,8,8,1] pixels. The data files hold pixels (what the pixel signature
    takes) and ``png`` bytes (what serving_default takes)."""
    import tensorflow as tf

    keras, L = seeded_keras()
    split = zdata.digits(SEED)
    model = _digits_cnn(keras, L, split)

    class Served(tf.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="image_bytes")])
        def from_bytes(self, image_bytes):
            def decode(b):
                img = tf.io.decode_image(b, channels=1, expand_animations=False)
                return tf.image.resize(tf.cast(img, tf.float32), (8, 8))

            pixels = tf.map_fn(decode, image_bytes, fn_output_signature=tf.float32)
            return {"probs": self.net(pixels)}

        @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 1], tf.float32, name="pixels")])
        def from_pixels(self, pixels):
            return {"probs": self.net(pixels)}

    served = Served(model)
    tf.saved_model.save(
        served,
        str(out),
        signatures={
            "serving_default": served.from_bytes.get_concrete_function(),
            "serving_pixels": served.from_pixels.get_concrete_function(),
        },
    )
    accuracy = float((predict_classes(lambda x: model(x).numpy(), split.x_eval) == split.y_eval).mean())
    return write_sidecars(out, split, "image_bytes", accuracy)


def _structured(rng, n: int) -> tuple[dict, np.ndarray]:
    """A heart-disease-like table: numeric ``age``/``chol``, string ``thal``, int ``cp``; the label a noisy rule."""
    age = rng.normal(54, 9, n).round().astype(np.float32)
    chol = rng.normal(246, 50, n).round().astype(np.float32)
    thal = rng.choice(np.array(["normal", "fixed", "reversible"]), n)
    cp = rng.integers(0, 4, n).astype(np.int64)
    score = (age - 54) / 9 + (chol - 246) / 50 + 1.5 * (thal == "reversible") - 0.8 * (cp == 0) + rng.normal(0, 0.5, n)
    x = {"age": age[:, None], "chol": chol[:, None], "thal": thal[:, None], "cp": cp[:, None]}
    return x, (score > 0.3).astype(np.int64)


def build_tabular_preprocessing(out: Path) -> dict:
    """The TF tutorial "classify structured data with preprocessing layers": a dict of named inputs, adapted
    Normalization (numeric), Discretization (age buckets), StringLookup and IntegerLookup + CategoryEncoding (one-hot), concatenated → MLP."""
    keras, L = seeded_keras()
    rng = np.random.default_rng(SEED)
    xt, yt = _structured(rng, 800)
    xe, ye = _structured(rng, 240)
    split = zdata.Split(xt, yt, xe, ye, ("healthy", "disease"))
    inputs, parts = {}, []
    for name in ("age", "chol"):
        inputs[name] = keras.Input((1,), name=name)
        norm = L.Normalization()
        norm.adapt(xt[name])
        parts.append(norm(inputs[name]))
    buckets = L.Discretization(num_bins=5)  # bucketized age, adapted (tf_keras traces a numpy_function for adapt)
    buckets.adapt(xt["age"])
    parts.append(L.CategoryEncoding(num_tokens=5, output_mode="one_hot")(buckets(inputs["age"])))
    inputs["thal"] = keras.Input((1,), name="thal", dtype="string")
    lookup = L.StringLookup(output_mode="one_hot")
    lookup.adapt(xt["thal"])
    parts.append(lookup(inputs["thal"]))
    inputs["cp"] = keras.Input((1,), name="cp", dtype="int64")
    ints = L.IntegerLookup()
    ints.adapt(xt["cp"])
    parts.append(L.CategoryEncoding(num_tokens=ints.vocabulary_size(), output_mode="one_hot")(ints(inputs["cp"])))
    x = L.Dense(16, activation="relu")(L.concatenate(parts))
    model = keras.Model(inputs, L.Dense(2, activation="softmax", name="probs")(x))
    fit(model, split, 20, lr=1e-2)
    accuracy = float((model.predict(xe, verbose=0).argmax(-1) == ye).mean())
    model.save(str(out), save_format="tf", include_optimizer=False)
    return write_sidecars(out, split, "tabular_preprocessing", accuracy)


def build_string_labels(out: Path) -> dict:
    """A digits CNN whose signature ends in a StaticHashTable: ``probs`` float32[N,10] and ``label`` string[N]
    (the class id looked up to its word)."""
    import tensorflow as tf

    keras, L = seeded_keras()
    split = zdata.digits(SEED)
    model = _digits_cnn(keras, L, split)

    class Labelled(tf.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net
            init = tf.lookup.KeyValueTensorInitializer(tf.range(10, dtype=tf.int64), tf.constant(WORDS))
            self.table = tf.lookup.StaticHashTable(init, default_value="unknown")

        @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 1], tf.float32, name="pixels")])
        def serve(self, pixels):
            probs = self.net(pixels)
            return {"probs": probs, "label": self.table.lookup(tf.argmax(probs, axis=-1))}

    served = Labelled(model)
    tf.saved_model.save(served, str(out), signatures={"serving_default": served.serve.get_concrete_function()})
    accuracy = float((predict_classes(lambda x: model(x).numpy(), split.x_eval) == split.y_eval).mean())
    return write_sidecars(
        out, zdata.Split(split.x_train, split.y_train, split.x_eval, split.y_eval, WORDS), "string_labels", accuracy
    )


def build_tf1_compat(out: Path) -> dict:
    """A TF1 graph: tf.compat.v1 placeholders and variables, a softmax regression trained in a Session on the
    digits and saved with ``tf.compat.v1.saved_model.simple_save``."""
    import tensorflow as tf

    v1 = tf.compat.v1
    split = zdata.digits(SEED)
    graph = tf.Graph()
    with graph.as_default():
        v1.set_random_seed(SEED)
        x = v1.placeholder(tf.float32, [None, 8, 8, 1], name="pixels")
        y = v1.placeholder(tf.int64, [None], name="label")
        flat = tf.reshape(x, [-1, 64]) / 255.0
        w1 = v1.get_variable("w1", [64, 32], initializer=v1.glorot_uniform_initializer(seed=SEED))
        b1 = v1.get_variable("b1", [32], initializer=v1.zeros_initializer())
        w2 = v1.get_variable("w2", [32, 10], initializer=v1.glorot_uniform_initializer(seed=SEED + 1))
        b2 = v1.get_variable("b2", [10], initializer=v1.zeros_initializer())
        logits = tf.matmul(tf.nn.relu(tf.matmul(flat, w1) + b1), w2) + b2
        probs = tf.nn.softmax(logits, name="probs")
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = v1.train.AdamOptimizer(1e-2).minimize(loss)
        rng = np.random.default_rng(SEED)
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(30):
                order = rng.permutation(len(split.y_train))
                for start in range(0, len(order), 32):
                    idx = order[start : start + 32]
                    sess.run(train, {x: split.x_train[idx], y: split.y_train[idx]})
            predicted = sess.run(probs, {x: split.x_eval}).argmax(-1)
            v1.saved_model.simple_save(sess, str(out), inputs={"pixels": x}, outputs={"probs": probs})
    return write_sidecars(out, split, "tf1_compat", float((predicted == split.y_eval).mean()))


def build_tf1_builder_bn(out: Path) -> dict:
    """A TF1 graph as TF1 code wrote it (``disable_v2_behavior``): conv + a batch norm whose moving statistics are
    ``VariableV2`` updated by ``Assign`` inside a ``tf.cond`` on a ``training`` placeholder_with_default, trained
    in a Session and exported with ``SavedModelBuilder`` (issue 42: ref variables the TF.js writer must freeze)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()  # this builder runs in a process of its own
    v1.set_random_seed(SEED)
    split = zdata.digits(SEED)
    x = v1.placeholder(tf.float32, [None, 8, 8, 1], name="pixels")
    y = v1.placeholder(tf.int64, [None], name="label")
    training = v1.placeholder_with_default(False, [], name="training")
    w = v1.get_variable("conv1/w", [3, 3, 1, 16], initializer=v1.glorot_uniform_initializer(seed=SEED))
    h = tf.nn.conv2d(x / 255.0, w, [1, 1, 1, 1], "SAME")
    with v1.variable_scope("bn1"):
        mm = v1.get_variable("moving_mean", [16], initializer=v1.zeros_initializer(), trainable=False)
        mv = v1.get_variable("moving_variance", [16], initializer=v1.ones_initializer(), trainable=False)
        gamma = v1.get_variable("gamma", [16], initializer=v1.ones_initializer())
        beta = v1.get_variable("beta", [16], initializer=v1.zeros_initializer())

    def batch_stats():
        m, v = tf.nn.moments(h, [0, 1, 2])
        with tf.control_dependencies([v1.assign(mm, 0.9 * mm + 0.1 * m), v1.assign(mv, 0.9 * mv + 0.1 * v)]):
            return tf.identity(m), tf.identity(v)

    mean, var = tf.cond(training, batch_stats, lambda: (tf.identity(mm), tf.identity(mv)))
    h = tf.nn.relu(tf.nn.batch_normalization(h, mean, var, beta, gamma, 1e-3))
    fw = v1.get_variable("fc/w", [16, 10], initializer=v1.glorot_uniform_initializer(seed=SEED + 1))
    logits = tf.matmul(tf.reduce_mean(h, axis=[1, 2]), fw) + v1.get_variable("fc/b", [10])
    probs = tf.nn.softmax(logits, name="probs")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = v1.train.AdamOptimizer(1e-2).minimize(loss)
    rng = np.random.default_rng(SEED)
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        for _ in range(20):
            order = rng.permutation(len(split.y_train))
            for start in range(0, len(order), 32):
                idx = order[start : start + 32]
                sess.run(train, {x: split.x_train[idx], y: split.y_train[idx], training: True})
        predicted = sess.run(probs, {x: split.x_eval}).argmax(-1)
        builder = v1.saved_model.Builder(str(out))
        signature = v1.saved_model.predict_signature_def({"pixels": x}, {"probs": probs})
        builder.add_meta_graph_and_variables(sess, ["serve"], signature_def_map={"serving_default": signature})
        builder.save()
    return write_sidecars(out, split, "tf1_builder_bn", float((predicted == split.y_eval).mean()))


def build_nms_in_graph(out: Path) -> dict:
    """A digit pasted into a 16×16 canvas: a CNN predicts 4 candidate boxes (one per quadrant anchor) with scores
    and classes, then ``tf.image.non_max_suppression`` keeps the best box inside the graph. Outputs ``classes``
    (softmax[N,10] of the kept box, the oracle's classification head) and ``boxes`` float32[N,4]."""
    import tensorflow as tf

    keras, L = seeded_keras()
    rng = np.random.default_rng(SEED)
    base = zdata.digits(SEED)
    xt, bt = _placed(base.x_train, rng)
    xe, be = _placed(base.x_eval, rng)
    inp = keras.Input((16, 16, 1), name="image")
    x = L.MaxPooling2D()(L.Conv2D(16, 3, padding="same", activation="relu")(L.Rescaling(1 / 255)(inp)))
    x = L.Dense(64, activation="relu")(L.Flatten()(L.Conv2D(32, 3, padding="same", activation="relu")(x)))
    net = keras.Model(
        inp,
        {
            "classes": L.Dense(10, activation="softmax", name="classes")(x),
            "boxes": L.Dense(4, activation="sigmoid", name="boxes")(x),
        },
    )
    split = zdata.Split(xt, base.y_train, xe, base.y_eval, base.labels)
    fit(net, split, 8, y_train={"classes": base.y_train, "boxes": bt})

    class Detector(tf.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        @tf.function(input_signature=[tf.TensorSpec([1, 16, 16, 1], tf.float32, name="image")])
        def serve(self, image):
            heads = self.net(image)
            # four candidates: the predicted box and three jittered copies, scored by confidence × shrink
            shifts = tf.constant(
                [[0.0, 0.0, 0.0, 0.0], [0.02, 0.02, 0.02, 0.02], [0.3, 0.3, 0.3, 0.3], [-0.01, 0.0, 0.01, 0.0]]
            )
            boxes = tf.clip_by_value(heads["boxes"][0][None, :] + shifts, 0.0, 1.0)
            conf = tf.reduce_max(heads["classes"][0])
            scores = conf * tf.constant([1.0, 0.9, 0.8, 0.7])
            keep = tf.image.non_max_suppression(boxes, scores, max_output_size=1, iou_threshold=0.5)
            return {"classes": heads["classes"], "boxes": tf.gather(boxes, keep)}

    served = Detector(net)
    tf.saved_model.save(served, str(out), signatures={"serving_default": served.serve.get_concrete_function()})
    accuracy = float((net.predict(xe, verbose=0)["classes"].argmax(-1) == base.y_eval).mean())
    info = write_sidecars(out, split, "nms_in_graph", accuracy)
    for name, boxes in (("calibration", None), ("eval", be), ("train", bt)):
        if boxes is not None:
            with np.load(out / f"{name}.npz") as f:
                arrays = dict(f)
            np.savez(out / f"{name}.npz", **arrays, boxes=boxes)
    return info
