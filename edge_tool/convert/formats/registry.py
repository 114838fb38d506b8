"""The capability table of output formats, filled by ``FORMATS.register(spec)`` in each module under
``convert/formats``.

A row says what a format writes (file suffix), whether it takes ``--quant`` modes (one artefact per mode) or is
one artefact per run, or extends each artefact of another format (micro beside every .tflite), whether
``--format all`` builds it, which optional extra and packages it needs, the options only it takes (its
``options`` record: ``--tfjs-quant``; refused when no chosen format takes them), and how it builds. Importing
``edge_tool.convert.formats`` fills it. Its readers: ``--format``'s choices (``formats.OutputFormat``), what a
``ConvertConfig`` builds (``config.formats``/``config.wants``) and refuses (each row's ``problems``),
``convert()``'s build loop, the manifest's library versions, and the format table in README.md/docs/convert.md.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from edge_tool.core.registry import Registry


@dataclass
class FormatJob:
    """What a format builder gets: the shared BuildContext, the output dir being written (renamed into place when
    the run succeeds), a scratch dir, the mode retry (TFLite's batch-1 re-trace), this run's background workers
    by format name, and a per-run cache builders share across modes (e.g. one exported float graph)."""

    ctx: object
    out_dir: Path
    work: Path
    retry: object = None
    workers: dict = field(default_factory=dict)
    cache: dict = field(default_factory=dict)


def artifact_name(model: Path, quant: str, suffix: str) -> str:
    """File name of a per-mode artefact: ``<model stem>_<quant><suffix>`` (``mnist_int8.tflite``)."""
    stem = Path(model).stem if Path(model).is_file() else Path(model).resolve().name
    return f"{stem or 'model'}_{quant}{suffix}"


def _no_problems(config) -> list[str]:
    return []


_HELP = "edgetool.option_help"


def option(default, help: str):
    """A field of a format's options record: ``tfjs_quant: TfjsQuant = option(TfjsQuant.NONE, "TFJS weight ...")``."""
    return field(default=default, metadata={_HELP: help})


@dataclass(frozen=True)
class FormatOption:
    """One option a format takes (a row of its argument column): its name (the ConvertConfig/API keyword and, with
    dashes, the CLI flag), type, default and help."""

    name: str
    type: type
    default: object
    help: str

    @property
    def flag(self) -> str:
        """The CLI flag: ``tfjs_quant`` -> ``--tfjs-quant``."""
        return "--" + self.name.replace("_", "-")

    @property
    def shown(self) -> str:
        """The option for the docs table: flag, choices and default."""
        if isinstance(self.type, type) and issubclass(self.type, Enum):
            choices = "{" + ",".join(m.value for m in self.type) + "}"
        else:
            choices = getattr(self.type, "__name__", str(self.type)).upper()  # int -> INT, as --help shows it
        default = self.default.value if isinstance(self.default, Enum) else self.default
        return f"`{self.flag} {choices}` (default {default})"


@dataclass(frozen=True)
class FormatSpec:
    """One output format: what it writes, what it needs, how it is built."""

    name: str  # the --format value and the manifest's artifacts[].format
    summary: str  # what it writes and what runs it (one line for --help and the docs table)
    suffix: str  # the artefact's file suffix ("/" for a directory)
    build: Callable  # per mode: (FormatJob, QuantMode) -> ManifestArtifact (the manifest's entry); once:
    #                  (FormatJob) -> same; extends: (FormatJob, the base's entry) -> its field ``name`` of that entry
    per_mode: bool = True  # one artefact per --quant mode (else one per run, e.g. a TFJS graph model)
    extends: str | None = None  # built beside every artefact of this format (asked for alone, it brings that one)
    in_all: bool = False  # part of --format all
    default_modes: tuple[str, ...] = ("fp32",)  # --quant when none is given
    modes: tuple[str, ...] | None = None  # the --quant modes it takes (None: every registered mode)
    extra: str | None = None  # the optional install extra it needs: pip install 'edgetool[<extra>]'
    packages: tuple[str, ...] = ()  # import names that extra provides (checked before the model loads)
    libraries: tuple[str, ...] = ()  # distributions whose versions the manifest records when it is built
    runtime_versions: tuple[tuple[str, str], ...] = ()  # (name, version) of what it is written for (tfjs 4.22.0)
    mode_builds: bool = False  # its artefacts are the mode registry's builds (convert/modes: the TFLite converter)
    key: str = "{format}-{quant}"  # its key in manifest timings_s and failed
    problems: Callable = _no_problems  # (ConvertConfig) -> list of problems with the options, [] if none
    refusal: Callable | None = None  # (PreparedSource) -> why this model cannot be written in it, or None
    start_worker: Callable | None = None  # (ConvertConfig) -> a background worker or None (before TF loads)
    submit: Callable | None = None  # (FormatJob) -> None: hand the work to its worker once the output dir is open
    options: type | None = None  # the frozen record of the options only it takes (fields made with ``option``)
    honours: tuple[str, ...] = ()  # shared ConvertConfig options only some formats honour (``io_type``), it among them

    @property
    def option_rows(self) -> tuple[FormatOption, ...]:
        """The options it takes (its argument column), read from its ``options`` record."""
        if self.options is None:
            return ()
        hints = typing.get_type_hints(self.options)
        return tuple(
            FormatOption(f.name, hints[f.name], f.default, f.metadata[_HELP]) for f in dataclasses.fields(self.options)
        )

    def key_of(self, quant: str) -> str:
        """This format's key for an artefact of ``quant`` (tflite: the mode alone, tfjs: "tfjs")."""
        return self.key.format(format=self.name, quant=quant)

    def missing_packages(self) -> tuple[str, ...]:
        """The packages of ``packages`` that cannot be imported here (checked without importing them)."""
        return tuple(p for p in self.packages if not _findable(p))

    def missing_extra(self) -> str | None:
        """Why this format cannot be built in this environment (its extra is not installed), or None."""
        missing = self.missing_packages()
        if not missing:
            return None
        return (
            f"--format {self.name} needs the optional '{self.extra}' extra, and {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed: pip install 'edgetool[{self.extra}]' "
            "(into the environment edgetool runs in), then run the same command again."
        )


def _findable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a blocked or half-removed package: not usable either
        return False


FORMATS: Registry[FormatSpec] = Registry("output format")
