"""Build a tf.distribute strategy by name (in-process strategies; multi-process ones live elsewhere)."""

from __future__ import annotations

from edge_tool.errors import UsageError
from edge_tool.training.config import Strategy


def split_cpu(tf, n: int) -> list[str]:
    """Split the physical CPU into ``n`` logical devices (before TF initialises) and return their names."""
    cpus = tf.config.list_physical_devices("CPU")
    try:
        tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * n)
    except RuntimeError:
        pass  # already initialised in this process: use what exists
    devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    if len(devices) < n:
        raise UsageError(
            f"MirroredStrategy needs {n} replicas but this process already initialised TensorFlow with "
            f"{len(devices)} CPU device(s); run training in a fresh process."
        )
    return devices[:n]


def build_local_strategy(tf, strategy: Strategy, replicas: int):
    """Return the strategy object for default, one-device or mirrored training."""
    if strategy is Strategy.DEFAULT:
        return tf.distribute.get_strategy()
    if strategy is Strategy.ONE_DEVICE:
        return tf.distribute.OneDeviceStrategy("/cpu:0")
    if strategy is Strategy.MIRRORED:
        gpus = tf.config.list_physical_devices("GPU")
        if len(gpus) >= replicas:
            return tf.distribute.MirroredStrategy([f"/gpu:{i}" for i in range(replicas)])
        devices = split_cpu(tf, replicas)
        return tf.distribute.MirroredStrategy(devices, cross_device_ops=tf.distribute.ReductionToOneDevice())
    raise UsageError(f"Strategy {strategy.value!r} is not an in-process strategy.")
