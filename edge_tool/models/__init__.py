"""The model floor: what a model takes and gives (signatures of SavedModels, Keras and .tflite files), the
``inspect`` report, the fixed-batch re-trace and the labels that follow the data. Above ``parsers``,
``trust``, ``metadata`` and ``litert``; below everything that converts, evaluates or ships a model."""
