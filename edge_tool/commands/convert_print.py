"""What ``edgetool convert`` prints after a run: the artefact table and the micro exports' arena and sources."""

from __future__ import annotations


def print_result(result) -> None:
    """The artefact table, each micro export's two lines, what was not built, and where the manifest is."""
    from rich.console import Console
    from rich.table import Table

    from edge_tool.core.textsafe import text, visible

    table = Table(title=text(f"edgetool convert → {result.output_dir}"))
    for col in ("artefact", "format", "mode", "size", "× fp32", "seconds"):
        table.add_column(col, justify="right" if col in ("size", "× fp32", "seconds") else "left")
    base = {a.format: a.size_bytes for a in result.artifacts if a.quant == "fp32"}
    for a in result.artifacts:
        fp32 = base.get(a.format) or base.get("tflite")  # tfjs has no fp32 of its own: against the fp32 .tflite
        ratio = f"{a.size_bytes / fp32:.2f}" if fp32 else "–"
        table.add_row(
            *map(text, (a.path, a.format, a.quant, f"{a.size_bytes / 1024:.1f} KiB", ratio, f"{a.seconds:.1f}"))
        )
    Console().print(table)
    for entry in result.manifest.artifacts:
        if entry.micro is not None:
            _print_micro(entry.path, entry.micro)
        bundle = entry.lm.litertlm if entry.lm is not None else None
        if bundle:
            print(
                visible(
                    f"{bundle['path']}: LiteRT-LM's greedy text equals edgetool's; caches {bundle['cache_layout']}."
                )
            )
            print(visible(f"  seeded sampling: {bundle['seeded_sampling']}"))
    for mode, why in result.failures.items():
        print(visible(f'not built: {mode} ({why}); manifest.json records it under "failed".'))
    print(visible(f"manifest: {result.output_dir / 'manifest.json'}"))


def _print_micro(path: str, micro) -> None:
    """The manifest's ``micro`` record (schemas.records.MicroRecord) in two lines."""
    from edge_tool.core.textsafe import visible

    arena = micro.tensor_arena
    print(
        visible(
            f"{path} for TFLite Micro: tensor arena {arena.recommended_bytes} bytes "
            f"(measured minimum {arena.minimum_bytes} + {arena.margin:.0%} margin), "
            f"flash {micro.flash_bytes} bytes (model array); {micro.resolver.class_name}: "
            f"{', '.join(micro.resolver.methods)}"
        )
    )
    print(visible(f"  sources: {', '.join(micro.files)}"))
