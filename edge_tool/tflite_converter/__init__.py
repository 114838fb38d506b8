"""The TFLite converter, run one way: ``run.new_converter``/``run.run_converter`` (every conversion edgetool makes),
the shared-work fast path behind them (``fast_path``), its calibration split across processes
(``calibration_shards``, each worker a ``calibration_worker``), the guard against calibrating a WHILE loop
(``loop_guard``) and the reading of the converter's error text (``diagnose``).

It sits below ``convert``, ``evaluate``, ``demo`` and ``check``, which all convert, and imports none of them."""
