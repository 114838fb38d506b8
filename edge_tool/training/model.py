"""The digits CNN (tf_keras / Keras 2, so QAT can rewrite it later)."""

from __future__ import annotations

from edge_tool.training.data import INPUT_SHAPE, LABELS


def build_model(keras, learning_rate: float = 3e-3, decay_steps: int | None = None):
    """Small CNN with preprocessing inside: raw 0..255 pixels in, softmax over 10 digits out.

    With ``decay_steps`` the learning rate follows a cosine decay to zero over that many steps.
    """
    layers = keras.layers
    inputs = keras.Input(shape=INPUT_SHAPE, name="pixels", dtype="float32")
    x = layers.Rescaling(1.0 / 255.0, name="rescale")(inputs)
    x = layers.Conv2D(16, 3, padding="same", use_bias=False, name="conv1")(x)
    x = layers.BatchNormalization(momentum=0.9, name="bn1")(x)
    x = layers.ReLU(name="relu1")(x)
    x = layers.Conv2D(32, 3, padding="same", use_bias=False, name="conv2")(x)
    x = layers.BatchNormalization(momentum=0.9, name="bn2")(x)
    x = layers.ReLU(name="relu2")(x)
    x = layers.MaxPooling2D(2, name="pool")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(64, activation="relu", name="dense1")(x)
    x = layers.Dropout(0.2, name="dropout")(x)
    outputs = layers.Dense(len(LABELS), activation="softmax", name="probs")(x)
    model = keras.Model(inputs, outputs, name="digits_cnn")
    model.compile(
        optimizer=keras.optimizers.Adam(
            keras.optimizers.schedules.CosineDecay(learning_rate, decay_steps) if decay_steps else learning_rate
        ),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model
