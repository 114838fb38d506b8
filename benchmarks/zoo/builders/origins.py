"""Zoo builders of models from other origins (issue 42), each in the form edgetool refuses and in the form the refusal
names as the way out: a Keras-3 CNN with the image-classification tutorial's augmentation layers inside
(``model.export()``, whose signature runs them; ``.keras``), a Keras 3 model trained on the JAX backend
(``model.export()`` writes XlaCallModule; ``.keras``), and a tensorflow-text tokenizer in the graph (the SavedModel
with the TFText ops; the numeric part on its own, token ids in)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from benchmarks.zoo import data as zdata
from benchmarks.zoo.builders.common import SEED, fit, predict_classes, seeded_keras, write_sidecars
from benchmarks.zoo.builders.media import TOPICS, _sentences


def _augmented(name: str, out: Path, keras_file: bool) -> dict:
    """The tutorial's shape on 8×8 digits: ``data_augmentation`` Sequential (RandomFlip, RandomRotation, RandomZoom,
    RandomContrast) → Rescaling → Conv → pooling → softmax; saved with ``model.export()`` or as ``model.keras``."""
    keras, L = seeded_keras()
    split = zdata.digits(SEED)
    data_augmentation = keras.Sequential(
        [L.RandomFlip("horizontal"), L.RandomRotation(0.05), L.RandomZoom(0.1), L.RandomContrast(0.2)],
        name="data_augmentation",
    )
    model = keras.Sequential(
        [
            keras.Input((8, 8, 1), name="pixels"),
            data_augmentation,
            L.Rescaling(1 / 255),
            L.Conv2D(16, 3, padding="same", activation="relu"),
            L.MaxPooling2D(),
            L.Flatten(),
            L.Dense(32, activation="relu"),
            L.Dense(10, activation="softmax", name="probs"),
        ]
    )
    return _save(model, split, out, name, keras_file, epochs=15)


def _save(model, split, out: Path, name: str, keras_file: bool, epochs: int) -> dict:
    fit(model, split, epochs=epochs)
    accuracy = float((predict_classes(lambda v: model.predict(v, verbose=0), split.x_eval) == split.y_eval).mean())
    out.mkdir(parents=True, exist_ok=True)
    if keras_file:
        model.save(str(out / "model.keras"))
    else:
        model.export(str(out))
    return write_sidecars(out, split, name, accuracy)


def build_keras3_augment(out: Path) -> dict:
    """The augmented CNN exported with ``model.export()``: its signature runs the random layers."""
    return _augmented("keras3_augment", out, keras_file=False)


def build_keras3_augment_keras(out: Path) -> dict:
    """The augmented CNN saved as ``model.keras``: edgetool exports it with training=False."""
    return _augmented("keras3_augment_keras", out, keras_file=True)


def _jax_trained(name: str, out: Path, keras_file: bool) -> dict:
    """A CNN (Conv → BatchNorm → ReLU → pooling → Dropout → softmax) trained by Keras 3 on the JAX backend."""
    os.environ["KERAS_BACKEND"] = "jax"  # before Keras is imported (the builder runs in a fresh process)
    keras, L = seeded_keras()
    assert keras.backend.backend() == "jax", keras.backend.backend()
    split = zdata.digits(SEED)
    inp = keras.Input((8, 8, 1), name="pixels")
    x = L.Activation("relu")(L.BatchNormalization()(L.Conv2D(16, 3, padding="same")(L.Rescaling(1 / 255)(inp))))
    x = L.Dropout(0.2)(L.Flatten()(L.MaxPooling2D()(x)))
    model = keras.Model(inp, L.Dense(10, activation="softmax", name="probs")(x))
    return _save(model, split, out, name, keras_file, epochs=15)


def build_jax_export(out: Path) -> dict:
    """The JAX-trained CNN exported with ``model.export()`` on the JAX backend (XlaCallModule ops)."""
    return _jax_trained("jax_export", out, keras_file=False)


def build_jax_keras(out: Path) -> dict:
    """The JAX-trained CNN saved as ``model.keras`` (edgetool exports it on the TensorFlow backend)."""
    return _jax_trained("jax_keras", out, keras_file=True)


VOCAB = sorted({w.lower() for t in TOPICS for w in t} | {"the", "a", "today", "very", "and", "of", "we", "it"})
TOKENS = 8


def _text_classifier(keras, L):
    """token ids int64[N, 8] → Embedding → mean → softmax over the topics."""
    ids = keras.Input((TOKENS,), dtype="int64", name="ids")
    x = L.GlobalAveragePooling1D()(L.Embedding(len(VOCAB) + 1, 8)(ids))
    return keras.Model(ids, L.Dense(len(TOPICS), activation="softmax", name="topic")(x))


def _tf_text(out: Path, name: str, with_tokenizer: bool) -> dict:
    """Sentences tokenized by tensorflow-text's WhitespaceTokenizer and mapped to ids by a vocabulary table, a
    tf_keras classifier on the ids; the SavedModel takes the strings (TFText ops in its graph) or, the way out,
    the classifier alone takes the ids."""
    import tensorflow as tf
    import tensorflow_text as tf_text

    keras, L = seeded_keras()
    rng = np.random.default_rng(SEED)
    (xt, yt), (xe, ye) = _sentences(rng, 800), _sentences(rng, 200)
    table = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(VOCAB, tf.range(1, len(VOCAB) + 1, dtype=tf.int64)), 0
    )
    tokenizer = tf_text.WhitespaceTokenizer()

    def ids(text):
        words = tokenizer.tokenize(tf.strings.regex_replace(tf.strings.lower(tf.reshape(text, [-1])), r"[.,]", ""))
        return table.lookup(words).to_tensor(shape=[None, TOKENS])

    model = _text_classifier(keras, L)
    idt, ide = ids(tf.constant(xt)).numpy(), ids(tf.constant(xe)).numpy()
    fit(model, zdata.Split(idt, yt, ide, ye, ()), epochs=20, lr=1e-2)
    accuracy = float((model.predict(ide, verbose=0).argmax(-1) == ye).mean())
    labels = tuple(t[0] for t in TOPICS)
    if not with_tokenizer:
        model.save(str(out), save_format="tf", include_optimizer=False)
        return write_sidecars(out, zdata.Split(idt, yt, ide, ye, labels), name, accuracy)

    class TextModel(tf.Module):
        def __init__(self):
            super().__init__()
            self.model, self.table = model, table

        @tf.function(input_signature=[tf.TensorSpec([None, 1], tf.string, name="text")])
        def serve(self, text):
            return {"topic": self.model(ids(text), training=False)}

    module = TextModel()
    tf.saved_model.save(module, str(out), signatures={"serving_default": module.serve.get_concrete_function()})
    return write_sidecars(out, zdata.Split(xt, yt, xe, ye, labels), name, accuracy)


def build_tf_text(out: Path) -> dict:
    """The classifier behind tensorflow-text's tokenizer in one SavedModel (strings in)."""
    return _tf_text(out, "tf_text", with_tokenizer=True)


def build_tf_text_ids(out: Path) -> dict:
    """The way out: the numeric part alone (token ids in), tokenized in the app."""
    return _tf_text(out, "tf_text_ids", with_tokenizer=False)
