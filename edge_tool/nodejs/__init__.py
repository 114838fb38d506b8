"""TensorFlow.js run in Node: the session that feeds a graph model batch by batch (used by convert's self-check,
eval's tfjs runtime and check's tfjs target)."""
