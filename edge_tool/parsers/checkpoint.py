"""Is a SavedModel's variables checkpoint whole? Checked before any converter or loader reads it, so a missing
shard or a truncated/corrupt file is named in the error (TensorFlow's own errors name RestoreV2 ops, not files)."""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import tempfile
from pathlib import Path

from edge_tool.calibration.safe_open import not_a_file
from edge_tool.core.env import import_tf
from edge_tool.errors import ModelError
from edge_tool.parsers.declared_sizes import check_checkpoint_shapes

VERIFY_BYTES = 256 << 20  # variables up to this size are read once up front, which checks their checksums


def check_variables(path: Path) -> None:
    """ModelError naming the file when the SavedModel's variables checkpoint is missing a shard, truncated or
    corrupt, before any converter or loader reads it (their errors name RestoreV2 ops, not files).

    Cheap checks always (index readable, every data shard present, shards at least as large as the tensors the
    index lists); checksums too, by reading each tensor once, when the variables total at most VERIFY_BYTES.
    """
    var_dir = Path(path) / "variables"
    index = var_dir / "variables.index"
    shards = sorted(var_dir.glob("variables.data-*-of-*"))
    odd = [(p, why) for p in (index, *shards) if os.path.lexists(p) and (why := not_a_file(p))]
    if odd:  # a FIFO would block TensorFlow's checkpoint reader forever
        raise ModelError(f"the SavedModel's variables are unreadable: {odd[0][0]} {odd[0][1]}.")
    if not index.is_file():
        if shards:
            raise ModelError(f"the SavedModel's variables are unreadable: {index} is missing (data shards are there).")
        return  # a SavedModel without variables
    stats = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in [index, *shards])
    _check_variables_cached(str(var_dir), stats)


@functools.lru_cache(maxsize=8)
def _check_variables_cached(var_dir: str, stats: tuple) -> None:
    var_dir = Path(var_dir)
    shards = [var_dir / name for name, _, _ in stats[1:]]
    counts = {m[1] for p in shards if (m := re.search(r"-of-(\d+)$", p.name))}
    expected = {var_dir / f"variables.data-{i:05d}-of-{n}" for n in counts for i in range(int(n))}
    missing = sorted(str(p) for p in expected - set(shards))
    if missing or not shards:
        what = missing[0] if missing else f"{var_dir}/variables.data-00000-of-00001"
        raise ModelError(f"the SavedModel's variables are unreadable: {what} is missing.")

    tf = import_tf()
    index = var_dir / "variables.index"
    with _glob_safe(var_dir) as readable:
        try:
            reader = tf.train.load_checkpoint(str(readable / "variables"))
            shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
        except (tf.errors.OpError, ValueError, IndexError) as exc:  # IndexError: TF's translation of OUT_OF_RANGE
            raise ModelError(
                f"the SavedModel's variables are unreadable or truncated: {index} ({_tf_message(exc)})."
            ) from None
        check_checkpoint_shapes(shapes, dtypes, index)
        _check_tensors(tf, reader, shapes, dtypes, stats, shards, var_dir)


@contextlib.contextmanager
def _glob_safe(var_dir: Path):
    """``var_dir``, or a temp symlink to it when its path holds glob characters: TF's checkpoint reader treats
    the prefix as a file pattern, so ``m[1]/variables`` would match nothing."""
    if not any(c in str(var_dir) for c in "*?[]{}\\"):
        yield var_dir
        return
    with tempfile.TemporaryDirectory(prefix="edgetool-ckpt-") as tmp:
        link = Path(tmp) / "variables"
        link.symlink_to(var_dir.resolve(), target_is_directory=True)
        yield link


def _check_tensors(tf, reader, shapes: dict, dtypes: dict, stats: tuple, shards: list, var_dir: Path) -> None:
    """Sizes against the index, then (up to VERIFY_BYTES) every tensor read once, which checks the checksums."""
    fixed = [n for n, d in dtypes.items() if d.is_numpy_compatible and d != tf.string]
    need = sum(math.prod(shapes[n]) * dtypes[n].size for n in fixed)
    have = sum(size for _, size, _ in stats[1:])
    data = str(shards[0]) if len(shards) == 1 else f"{var_dir}/variables.data-*"
    if have < need:
        raise ModelError(
            f"the SavedModel's variables are unreadable or truncated: {data} holds {have:,} bytes, "
            f"the index lists {need:,} bytes of tensors."
        )
    if need > VERIFY_BYTES:
        return
    for name in sorted(shapes):
        try:
            reader.get_tensor(name)
        except (tf.errors.OpError, ValueError, IndexError) as exc:
            raise ModelError(
                f"the SavedModel's variables are unreadable or truncated: {data} (variable {name!r}: "
                f"{_tf_message(exc)})."
            ) from None


def _tf_message(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc)
    text = re.sub(r"\{\{[^}]*\}\}|\[Op:[^\]]*\]", "", text.strip().splitlines()[0] if text.strip() else "").strip()
    return text[:300] or type(exc).__name__
