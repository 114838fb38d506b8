"""``edgetool convert --from-manifest MANIFEST [-o DIR]``: rerun the conversion a manifest.json records and report,
file by file, whether the rerun's bytes are the recorded ones (exit 0 all identical, 1 not: docs/convert.md)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import typer

from edge_tool.errors import NotReproduced, UsageError

ALLOWED = {"from_manifest", "output", "force"}  # the rest comes from the manifest


def refuse_other_options(ctx: typer.Context) -> None:
    """UsageError naming any option given besides --from-manifest, -o and --force (the manifest holds the rest)."""
    given = [
        p.opts[0] if p.opts else p.name
        for p in ctx.command.params
        if p.name not in ALLOWED and getattr(ctx.get_parameter_source(p.name), "name", "DEFAULT") != "DEFAULT"
    ]
    if given:
        raise UsageError(
            f"--from-manifest takes the model and every option from the manifest; {', '.join(given)} cannot be "
            "given with it (only -o and --force). Run convert without --from-manifest to change an option."
        )


def rerun(ctx: typer.Context, manifest_path: Path, output: Path | None, force: bool) -> None:
    """Convert again as the manifest says (into ``output``, or a temporary directory), print the per-file table,
    and raise NotReproduced when any file differs."""
    from edge_tool.commands.convert_print import print_result
    from edge_tool.convert.api import convert
    from edge_tool.convert.recipe import compare, first_run_dir, read_recipe, rerun_config

    refuse_other_options(ctx)
    first = read_recipe(manifest_path)
    manifest_file = manifest_path / "manifest.json" if manifest_path.is_dir() else manifest_path
    base = first_run_dir(manifest_file, first.options.output_dir)
    with tempfile.TemporaryDirectory(prefix="edgetool-rerun-") as tmp:
        config = rerun_config(first.options, base, output or Path(tmp) / "rerun", force)
        result = convert(config)
        if output is not None:
            print_result(result)
        checks = compare(first, result.manifest, result.output_dir)
    _print_checks(checks, manifest_file)
    bad = [c for c in checks if not c.identical]
    if bad or not checks:
        raise NotReproduced(
            f"{len(bad)} of {len(checks)} files differ from the ones {manifest_file} records "
            "(the table above says which); the rerun used the same options, seeds and calibration selection, so "
            "a library version (manifest 'versions') or a non-deterministic step changed them."
        )


def _print_checks(checks, manifest_file: Path) -> None:
    """The per-file table: path, recorded and rerun sha256 (first 12 digits), identical or not."""
    from rich.console import Console
    from rich.table import Table

    from edge_tool.core.textsafe import text

    table = Table(title=text(f"edgetool convert --from-manifest {manifest_file}"))
    for col in ("file", "recorded sha256", "rerun sha256", "bytes"):
        table.add_column(col)
    for c in checks:
        verdict = (
            "identical" if c.identical else ("missing" if c.made is None else "new" if not c.recorded else "DIFFER")
        )
        table.add_row(*map(text, (c.path, (c.recorded or "–")[:12], (c.made or "–")[:12], verdict)))
    Console().print(table)
