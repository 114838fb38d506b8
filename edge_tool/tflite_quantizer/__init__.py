"""Quantize a float .tflite file with ai-edge-quantizer (`run.quantize_tflite`: a float file + a `recipes.Recipe` → a
frozen `run.QuantizedTflite` saying what was quantized, what stayed float and whether anything changed)."""
