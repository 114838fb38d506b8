"""The language-model compiler: an LM SavedModel's prefill/decode endpoints to one multi-signature .tflite per mode
(the TFLite converter, then ai-edge-quantizer for the weight-only modes), each self-checked call by call against the
SavedModel, and packed as a .litertlm for LiteRT-LM (``convert.lm_run`` orchestrates it for ``convert --task lm``)."""
