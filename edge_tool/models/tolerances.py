"""How close a written float file must stay to TensorFlow on the seeded probes of ``models.probes``: the convert
self-check's float modes and the TF.js writer's self-check read them (light: the mode registry reads them at --help
time, before numpy)."""

FLOAT32_TOLERANCE = 1e-3  # max |file - TensorFlow| / max(1, max |TensorFlow output|) a float32 file may show
FLOAT16_TOLERANCE = 5e-2  # the same for a file computing (partly) in float16
