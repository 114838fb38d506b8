"""Resolve a model's input contract (``calibration.contract.ImageContract``) once: from options, from what the model
says (Keras config, graph constants, embedded metadata), or by probing the float reference on labelled images."""
