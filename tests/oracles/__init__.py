"""Independent oracles the tests (and the benchmarks) compare edgetool with: the raw ``tf.lite.TFLiteConverter`` per
mode, a plain ai_edge_litert runner, a tfjs-in-Node runner and numpy task metrics. Nothing here imports edgetool's
conversion or evaluation code; benchmarks may import these, tests never import ``benchmarks``."""
