"""The model-file floor: a model file's bytes, bounded and parsed before any loader sees them (.tflite flatbuffers,
.keras archives, TFJS model.json against its shards, SavedModel checkpoints, the documented size limits). No
TensorFlow graph is loaded here; imports only ``core`` and ``errors``."""
