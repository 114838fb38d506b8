"""manifest.json's ``options``: the resolved ``edgetool convert`` options as a typed record, the recipe that
``edgetool convert --from-manifest`` reruns (``convert.recipe``). One field per ``convert.config.ConvertConfig``
field, in its order (tests/test_convert_recipe.py keeps the two in step); paths as given on the command line.

``format_options`` holds each built format's options record by format name (``{"tfjs": {"tfjs_quant": "none"}}``;
``convert.formats`` turns them back into the format's own frozen record). Files written before the formats' options
moved there carry ``tfjs_quant`` at the top level instead: read, and written back, as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edge_tool.calibration.serial import Record, spec

_NONE = spec(omit="none")


@dataclass(frozen=True)
class ConvertOptions(Record):
    """The options of one conversion run (``ConvertConfig.to_dict()``), typed."""

    model: str
    output_dir: str
    modes: tuple[str, ...]  # --quant, resolved ('all' expanded), in build order
    output_format: str  # --format
    calibration: str | None  # None: calibration.npz beside the model
    samples: int  # calibration selection: how many, drawn with ``seed``
    io_type: str
    train_data: str | None
    eval_data: str | None
    qat_epochs: int
    strategy: str
    replicas: int
    tfjs_quant: str | None = field(default=None, kw_only=True, metadata=_NONE)  # files before format_options only
    format_options: dict[str, dict] | None = field(default=None, kw_only=True, metadata=_NONE)
    allow_select_tf_ops: bool
    batch: int | None
    signature: str | None
    seed: int
    force: bool
    keep_going: bool
    labels: str | None
    metadata: bool
    input_range: str | None
    input_mean: tuple[float, ...] | None
    input_std: tuple[float, ...] | None
    trust_model_code: bool
