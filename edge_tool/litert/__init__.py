"""The LiteRT floor: what convert, evaluate, check and demo share about running .tflite files (the interpreter
wrapper, what a flatbuffer says without running it, one-artefact-one-process workers, the per-layer debugger).
Below convert and evaluate: it imports neither."""
