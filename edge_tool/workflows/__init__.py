"""The workflow floor (with ``auto`` and ``check``): work composed from convert, evaluate and demo, called by the
commands and the Python API (``keras_files``: inspect, eval and demo of a Keras file)."""
