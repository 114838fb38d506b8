"""``--format micro``: beside a full-integer .tflite, the C sources, op resolver and measured arena for TFLM."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edge_tool.errors import ConversionError
from edge_tool.micro import resolver, sources, tflm
from edge_tool.parsers.tflite_model import summarize_tflite
from edge_tool.schemas.records import MicroRecord, Resolver


@dataclass(frozen=True)
class MicroExport:
    """What ``export_micro`` wrote and measured."""

    files: tuple[Path, ...]
    ops: tuple[str, ...]
    resolver_methods: tuple[str, ...]
    arena: tflm.ArenaSize
    flash_bytes: int

    def record(self) -> MicroRecord:
        """The manifest's ``micro`` record (file names relative to the output directory)."""
        return MicroRecord(
            tuple(p.name for p in self.files),
            self.ops,
            Resolver(f"tflite::MicroMutableOpResolver<{len(self.ops)}>", self.resolver_methods),
            self.arena,
            self.flash_bytes,
            tflite_micro=tflm.tflm_version(),
        )


def export_micro(tflite: Path, out_dir: Path) -> MicroExport:
    """Check the model runs in TFLM, measure its arena, write ``<model>_model_data.{cc,h}`` and ``_op_resolver.h``.

    Raises ConversionError naming every op TFLM refuses (nothing is written then).
    """
    tflm.require_tflm()

    data = Path(tflite).read_bytes()
    refused, _ = tflm.unsupported_ops(tflite)
    if refused:
        listed = "; ".join(f"{op} ({why})" for op, why in refused)
        raise ConversionError(
            f"TFLite Micro cannot run {Path(tflite).name}: {listed}. Replace these ops in the model (edgetool check "
            "--target tflm lists them), or deploy with LiteRT instead of TFLM."
        )
    ops = tuple(summarize_tflite(data).ops)
    methods = tuple(resolver.resolver_method(op) or "" for op in ops)
    arena = tflm.measure_arena(tflite)
    ident = sources.c_identifier(Path(tflite).stem)
    names = {"cc": f"{ident}_model_data.cc", "h": f"{ident}_model_data.h", "resolver": f"{ident}_op_resolver.h"}
    texts = {
        "cc": sources.model_data_cc(data, ident, names["h"]),
        "h": sources.model_data_h(ident, arena.recommended_bytes, arena.minimum_bytes, names["resolver"]),
        "resolver": resolver.resolver_header(list(ops), ident),
    }
    files = []
    for key, text in texts.items():
        path = Path(out_dir) / names[key]
        path.write_text(text, encoding="ascii")
        files.append(path)
    return MicroExport(tuple(files), ops, methods, arena, len(data))
