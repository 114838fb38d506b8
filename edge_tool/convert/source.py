"""Turn any MODEL argument (SavedModel dir, .keras, .h5) into one SavedModel the converters read."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from edge_tool.calibration.safe_open import require_regular
from edge_tool.convert.keras3_file import export_keras3_file
from edge_tool.core.env import import_tf
from edge_tool.errors import ModelError
from edge_tool.models.augmentation import refuse_training_only_ops
from edge_tool.models.fixed_batch import save_fixed_batch
from edge_tool.models.precision import cast_saved_model
from edge_tool.models.signatures import SERVING, SignatureInfo, saved_model_flavor, saved_model_signature
from edge_tool.parsers.keras_archive import check_keras_archive
from edge_tool.parsers.limits import check_signature
from edge_tool.parsers.tree import content_hash
from edge_tool.schemas.records import FixedBatch, PrecisionCast, SourceRecord
from edge_tool.trust import custom_objects
from edge_tool.trust.guard import require_no_keras_code, require_no_side_effects

KERAS_FILE_SUFFIXES = (".keras", ".h5", ".hdf5")


@dataclass(frozen=True)
class PreparedSource:
    """The model as given and the SavedModel used for conversion."""

    original: Path
    saved_model: Path
    kind: str  # "saved_model" | "keras-file"
    flavor: str  # keras2 | keras3-export | tf-saved-model
    signature: SignatureInfo
    sha256: str
    fixed_batch: FixedBatch | None = None  # --batch: the batch, how it was fixed, the re-traced signature
    precision: PrecisionCast | None = None  # a mixed-precision model's float32 recast (edge_tool.models.precision)
    inference_only: tuple[str, ...] = ()  # a Keras file's layers active in training only, left out of the export

    @property
    def record(self) -> SourceRecord:
        """manifest.json's ``source`` (``signature`` is the model's own, before --batch)."""
        return SourceRecord(
            str(self.original),
            self.kind,
            self.flavor,
            self.sha256,
            self.signature,
            self.fixed_batch,
            self.precision,
            self.inference_only or None,
        )


def is_keras_file(path: Path) -> bool:
    """True for a .keras/.h5/.hdf5 file (what ``prepare_source`` exports to a SavedModel before any other use)."""
    return Path(path).is_file() and Path(path).suffix.lower() in KERAS_FILE_SUFFIXES


@contextlib.contextmanager
def opened_source(model: Path, trust_model_code: bool = False, as_trained: bool = False) -> Iterator[PreparedSource]:
    """``prepare_source`` for commands that read a model without converting it (inspect, eval --reference, check,
    demo, auto's reference): a Keras file is exported the one way convert does, into a temp dir that lives as
    long as the block (with the same refusal of code in the model unless ``trust_model_code``); ``as_trained``
    keeps a mixed-precision model as it is (a reference), not recast to float32."""
    with tempfile.TemporaryDirectory(prefix="edgetool-src-") as work:
        yield prepare_source(Path(model), Path(work), trust_model_code=trust_model_code, as_trained=as_trained)


def check_keras_file(model: Path) -> None:
    """A .keras/.h5 file checked before a Keras loader opens it: a regular file; a .keras archive whose members
    are sane (``keras_archive.check_keras_archive``: no zip bomb, sizes and names checked); ModelError otherwise."""
    if model.suffix.lower() == ".keras":
        check_keras_archive(model)
    else:
        require_regular(model, "a Keras .h5 model file", ModelError)


# This process's Keras-file exports: (file sha256, batch, trust) -> (the export, its Retrace). One command may prepare
# the same file more than once (auto: its reference, the candidates, the selective search), and a Keras-3 export is a
# fresh Keras process (~10 s); a later request copies the earlier export while it still exists.
_EXPORTED: dict[tuple[str, int | None, bool, tuple], tuple[Path, object]] = {}


def _keras_file_to_saved_model(model: Path, out: Path, batch: int | None, trust_model_code: bool, sha256: str):
    """``_export_keras_file``'s SavedModel at ``out``, copied from this process's earlier export of the same file
    bytes with the same batch and trust when that is still on disk."""
    key = (sha256, batch, trust_model_code, custom_objects.active().specs)
    earlier = _EXPORTED.get(key)
    if earlier is not None and (earlier[0] / "saved_model.pb").is_file():
        shutil.copytree(earlier[0], out, symlinks=True)
        return earlier[1]
    exported = _export_keras_file(model, out, batch, trust_model_code)
    _EXPORTED[key] = (Path(out), exported)
    return exported


def _export_keras_file(model: Path, out: Path, batch: int | None, trust_model_code: bool = False):
    """Load a .keras/.h5 file with tf_keras (Keras 2) and save it; fall back to a Keras 3 export in a subprocess,
    which fixes the batch itself. Returns (the Keras-3 export's ``Retrace`` with ``batch``, else None; the layers
    active in training only, which the export leaves out). Keras's safe mode is off only when ``trust_model_code``
    (``prepare_source`` has refused code otherwise)."""
    import_tf()
    import tf_keras

    try:
        keras_model = tf_keras.models.load_model(
            str(model), compile=False, safe_mode=not trust_model_code, custom_objects=custom_objects.active().objects
        )
        keras_model.save(str(out), save_format="tf", include_optimizer=False)  # traced with training=False
        return None, _training_only(keras_model)
    except Exception as keras2_exc:
        first = f"{type(keras2_exc).__name__}: {keras2_exc}"

    return export_keras3_file(model, out, batch, first, trust_model_code)


def _training_only(keras_model) -> tuple[str, ...]:
    """``name (Class)`` of each tf_keras layer whose call defaults to ``training=True`` (random augmentation): the
    saved graph leaves them out, as Keras 3's export in ``keras3_file`` does."""
    import inspect  # noqa: PLC0415

    def active(layer) -> bool:
        param = inspect.signature(layer.call).parameters.get("training")
        return param is not None and param.default is True

    layers = keras_model._flatten_layers(include_self=False, recursive=True)
    return tuple(f"{layer.name} ({type(layer).__name__})" for layer in layers if active(layer))


def _unbatched(info: SignatureInfo) -> SignatureInfo:
    """``info`` with a free (None) batch dimension: the signature of a model that was exported with a fixed one."""

    def free(t):
        return t if not t.shape else replace(t, shape=(None, *t.shape[1:]))

    return SignatureInfo(info.key, tuple(map(free, info.inputs)), tuple(map(free, info.outputs)))


def _glob_free(model: Path, workdir: Path) -> Path:
    """``model``, or a symlink to it under ``workdir`` when its path holds glob characters: TensorFlow reads the
    variables checkpoint through a file pattern, so a SavedModel in ``runs/m[1]`` would not load."""
    if not any(c in str(model) for c in "*?[]{}\\"):
        return model
    link = workdir / "source_savedmodel"
    if not link.is_symlink():
        link.symlink_to(model.resolve(), target_is_directory=True)
    return link


def prepare_source(
    model: Path,
    workdir: Path,
    batch: int | None = None,
    trust_model_code: bool = False,
    signature_key: str | None = None,
    as_trained: bool = False,
) -> PreparedSource:
    """Validate MODEL and return the SavedModel to convert (a temp export under ``workdir`` for Keras files, and
    a re-traced copy there with ``batch``: see ``edge_tool.models.fixed_batch``); ``signature_key`` (default
    ``serving_default``) is the signature converted. A mixed-precision model (float16/bfloat16 compute) is recast
    to float32 there (``edge_tool.models.precision``) unless ``as_trained``. Code in the model (Python in a Keras
    file's config, side-effect ops in the graph: ``edge_tool.trust``) is refused unless ``trust_model_code``."""
    model = Path(model)
    if not model.exists():
        raise ModelError(
            f"Expected a model (SavedModel directory, .keras or .h5 file) at {model}, but nothing is there."
        )
    if not model.is_dir():
        if model.suffix.lower() not in KERAS_FILE_SUFFIXES:
            raise ModelError(
                f"Expected a SavedModel directory or a Keras file ({', '.join(KERAS_FILE_SUFFIXES)}), "
                f"but {model} is a {model.suffix or 'suffix-less'} file."
            )
        check_keras_file(model)
        require_no_keras_code(model, trust_model_code, "Exporting it to a SavedModel needs a Keras object")
        saved, sha256 = Path(workdir) / "keras_source_savedmodel", content_hash(model)
        exported, inactive = _keras_file_to_saved_model(model, saved, batch, trust_model_code, sha256)
        kind = "keras-file"
    else:
        saved, kind, exported, sha256, inactive = _glob_free(model, Path(workdir)), "saved_model", None, None, ()
        refuse_training_only_ops(saved, signature_key or SERVING, model)
    require_no_side_effects(
        saved, trust_model_code, "Converting it (the self-check and calibration run the graph)", signature_key
    )
    signature = saved_model_signature(saved, signature_key or SERVING)
    flavor, fixed = saved_model_flavor(saved), None
    if exported is not None:  # a Keras-3 file exported with the batch fixed (and loops unrolled) by Keras itself
        fixed = FixedBatch(batch, exported.method, exported.unrolled, signature)
        signature = _unbatched(signature)
    elif batch is not None:
        retraced = Path(workdir) / f"batch{batch}_savedmodel"
        how = save_fixed_batch(saved, retraced, batch, signature.key, trust_model_code=trust_model_code)
        fixed = FixedBatch(batch, how.method, how.unrolled, saved_model_signature(retraced))
        saved, signature = retraced, replace(signature, key=SERVING)  # the re-trace serves it as that
    precision = None if as_trained else cast_saved_model(saved, Path(workdir) / "float32_savedmodel", signature.key)
    if precision is not None:  # served as serving_default, float16 inputs and outputs now float32
        saved, signature = Path(workdir) / "float32_savedmodel", _float32_io(replace(signature, key=SERVING))
    check_signature(signature, model)  # before any probe, calibration batch, LiteRT arena or TFJS page allocates
    digest = sha256 or content_hash(model)
    return PreparedSource(model, saved, kind, flavor, signature, digest, fixed, precision, inactive)


def _float32_io(info: SignatureInfo) -> SignatureInfo:
    """``info`` with float16/bfloat16 inputs and outputs as float32 (what the float32 recast takes and gives)."""

    def widen(t):
        return replace(t, dtype="float32") if t.dtype in ("float16", "bfloat16") else t

    return SignatureInfo(info.key, tuple(map(widen, info.inputs)), tuple(map(widen, info.outputs)))
