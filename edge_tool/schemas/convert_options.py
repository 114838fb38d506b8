"""manifest.json's ``options``: the resolved ``edgetool convert`` options as a typed record, the recipe that
``edgetool convert --from-manifest`` reruns (``convert.recipe``). One field per ``convert.config.ConvertConfig``
field, in its order (tests/test_convert_recipe.py keeps the two in step); paths as given on the command line.

``format_options`` holds each built format's options record by format name (``{"tfjs": {"tfjs_quant": "none"}}``;
``convert.formats`` turns them back into the format's own frozen record). Files written before the formats' options
moved there carry ``tfjs_quant`` at the top level instead: read, and written back, as they are. An option added
after a file was written (``trust_model_code``, ...) reads as its default: the schema requires the first five.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field

from edge_tool.calibration.serial import Record, spec

_NONE = spec(omit="none")


@dataclass(frozen=True)
class ConvertOptions(Record):
    """The options of one conversion run (``ConvertConfig.to_dict()``), typed."""

    model: str
    output_dir: str
    modes: tuple[str, ...]  # --quant, resolved ('all' expanded), in build order
    output_format: str  # --format
    _: KW_ONLY  # below: an option a file from an earlier edgetool may lack reads as its default (written always)
    calibration: str | None = None  # None: calibration.npz beside the model
    samples: int = 200  # calibration selection: how many, drawn with ``seed``
    io_type: str = "model"
    train_data: str | None = None
    eval_data: str | None = None
    qat_epochs: int = 3
    strategy: str = "default"
    replicas: int = 2
    tfjs_quant: str | None = field(default=None, metadata=_NONE)  # files before format_options only
    format_options: dict[str, dict] | None = field(default=None, metadata=_NONE)
    allow_select_tf_ops: bool = False
    batch: int | None = None
    signature: str | None = None
    seed: int
    force: bool = False
    keep_going: bool = False
    labels: str | None = None
    metadata: bool = True
    input_range: str | None = None
    input_mean: tuple[float, ...] | None = None
    input_std: tuple[float, ...] | None = None
    trust_model_code: bool = False
