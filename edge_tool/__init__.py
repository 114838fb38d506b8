"""edgetool: train with tf.distribute, convert to TFLite/TFJS, evaluate drift and latency, ship a PWA demo."""

__version__ = "0.1.0"
