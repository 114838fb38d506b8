"""The programs bench_device.py runs: the model builder (on the host) and the plain interpreter loops it types on
the host and on each board by hand (no edgetool code in them)."""

_BUILD = """
import sys, numpy as np, tensorflow as tf, tf_keras as keras
from sklearn.datasets import load_digits
o, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
keras.utils.set_random_seed(0)
if kind == "digits":
    d = load_digits()
    x = (d.images / 16.0).astype("float32").reshape(-1, 8, 8, 1)
    inp = keras.Input((8, 8, 1), name="image")
    h = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inp)
    m = keras.Model(inp, keras.layers.Dense(10, activation="softmax", name="probs")(keras.layers.Flatten()(h)))
    m.compile("adam", "sparse_categorical_crossentropy")
    m.fit(x[:1200], d.target[:1200], epochs=4, batch_size=32, verbose=0)
    xe, ye, cal = x[1200:1200 + n], d.target[1200:1200 + n], x[:100]
    np.savez(o + "/eval.npz", x=xe, y=ye)
else:
    m = keras.applications.MobileNetV2(weights=None, alpha=0.35, input_shape=(96, 96, 3), classes=10)
    rng = np.random.default_rng(0)
    xe, cal = rng.uniform(-1, 1, (n, 96, 96, 3)).astype("float32"), rng.uniform(-1, 1, (32, 96, 96, 3)).astype("float32")
    m.compile("adam", "sparse_categorical_crossentropy")  # one epoch on random labels: BatchNorm statistics move,
    m.fit(rng.uniform(-1, 1, (64, 96, 96, 3)).astype("float32"), rng.integers(0, 10, 64), epochs=1, verbose=0)
    np.savez(o + "/eval.npz", x=xe)
m.save(o + "/model", save_format="tf")
np.save(o + "/x.npy", xe)
open(o + "/fp32.tflite", "wb").write(tf.lite.TFLiteConverter.from_saved_model(o + "/model").convert())
c = tf.lite.TFLiteConverter.from_saved_model(o + "/model")
c.optimizations = [tf.lite.Optimize.DEFAULT]
c.representative_dataset = lambda: ([cal[i:i + 1]] for i in range(len(cal)))
c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
c.inference_input_type = c.inference_output_type = tf.int8
open(o + "/int8.tflite", "wb").write(c.convert())
"""

# raw int8 outputs, one sample per invoke: run by the host's LiteRT and by the board's tflite_runtime
_RAW = """
import sys, numpy as np
try:
    from ai_edge_litert.interpreter import Interpreter
except ImportError:
    from tflite_runtime.interpreter import Interpreter
d = sys.argv[1]
x = np.load(d + "/x.npy")
it = Interpreter(model_path=d + "/int8.tflite")
it.allocate_tensors()
i, o = it.get_input_details()[0], it.get_output_details()[0]
sc, z = i["quantization"]
ys = []
for k in range(len(x)):
    it.set_tensor(i["index"], np.clip(np.round(x[k:k + 1] / sc + z), -128, 127).astype(np.int8))
    it.invoke()
    ys.append(it.get_tensor(o["index"]).copy())
np.save(d + "/" + sys.argv[2] + ".npy", np.concatenate(ys))
"""

# the plain loop on a board: the first eval sample (int8 input quantized with the file's scale), one thread,
# warm-up then timed set_tensor + invoke + get_tensor calls; prints the p50 in ms
_LOOP = """
import sys, time, numpy as np
from tflite_runtime.interpreter import Interpreter
d, name, warmup, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
it = Interpreter(model_path=d + "/" + name, num_threads=1)
it.allocate_tensors()
i, o = it.get_input_details()[0], it.get_output_details()[0]
x = np.load(d + "/x.npy")[:1].astype(np.float64)
if i["dtype"] == np.int8:
    sc, z = i["quantization"]
    x = np.clip(np.round(x / sc + z), -128, 127)
x = x.astype(i["dtype"])
def step():
    it.set_tensor(i["index"], x)
    it.invoke()
    it.get_tensor(o["index"])
for _ in range(warmup):
    step()
times = []
for _ in range(runs):
    t = time.perf_counter_ns()
    step()
    times.append(time.perf_counter_ns() - t)
print(float(np.percentile(np.array(times) / 1e6, 50)))
"""
