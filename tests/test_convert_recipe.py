"""manifest.json is a recipe: its typed ``options`` rebuild the run's ConvertConfig, and ``convert --from-manifest``
reruns the conversion and says, file by file, whether the bytes are the recorded ones (exit 0; 1 when not)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil

import pytest

from edge_tool.convert.config import ConvertConfig
from edge_tool.convert.recipe import first_run_dir
from edge_tool.schemas.convert_options import ConvertOptions
from tests.edgetool_runs import edgetool_process, run_edgetool


def test_the_options_record_has_every_convert_option_in_order():
    """A ConvertConfig field the record lacks would be lost from the recipe (build_manifest refuses it: strict)."""
    record = [f.name for f in dataclasses.fields(ConvertOptions) if f.name != "tfjs_quant"]  # files before 0.1
    assert record == [f.name for f in dataclasses.fields(ConvertConfig)]


def test_options_an_earlier_edgetool_did_not_write_read_as_their_defaults():
    options = ConvertOptions.from_dict(
        {"model": "m", "output_dir": "o", "modes": ["int8"], "output_format": "tflite", "seed": 0}
    )
    assert options.samples == 200 and options.trust_model_code is False and options.format_options is None
    written = options.to_dict()
    every = [f.name for f in dataclasses.fields(ConvertConfig) if f.name != "format_options"]  # None: not written
    assert list(written) == every and written["seed"] == 0


def test_relative_paths_are_read_from_the_first_runs_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert first_run_dir(tmp_path / "a" / "out" / "manifest.json", "a/out") == tmp_path
    assert first_run_dir(tmp_path / "a" / "out" / "manifest.json", "out") == tmp_path / "a"
    assert first_run_dir(tmp_path / "moved" / "manifest.json", "out") == tmp_path  # moved since: the current dir


def test_no_other_option_with_from_manifest(tmp_path):
    proc = run_edgetool("convert", "--from-manifest", tmp_path / "manifest.json", "--quant", "int8", "--seed", "1")
    assert proc.returncode == 2 and "--quant, --seed cannot be given with it" in proc.stderr, proc.stderr


@pytest.mark.slow  # three conversions of the digits CNN (fp32, int8 and TF.js: the quick start's kinds)
def test_from_manifest_reproduces_a_conversion_byte_for_byte(digits_model, tmp_path):
    shutil.copytree(digits_model, tmp_path / "model")
    env = dict(os.environ)
    first = edgetool_process(
        ["convert", "model", "-q", "fp32,int8", "--format", "all", "-o", "out"], env, tmp_path, 900
    )
    assert first.returncode == 0, first.stderr[-3000:]

    again = run_edgetool("convert", "--from-manifest", tmp_path / "out" / "manifest.json", "-o", tmp_path / "new")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    rows = [line for line in again.stdout.splitlines() if "identical" in line]
    names = ["model_fp32.tflite", "model_int8.tflite", "tfjs/group1-shard1of1.bin", "tfjs/model.json"]
    assert [row.split("│")[1].strip() for row in rows] == names, again.stdout
    for name in names:
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "new" / name).read_bytes(), name

    manifest = tmp_path / "out" / "manifest.json"  # a recorded hash that is not the bytes: refused, per file
    doc = json.loads(manifest.read_text())
    doc["artifacts"][0]["sha256"] = "0" * 64
    manifest.write_text(json.dumps(doc))
    differs = run_edgetool("convert", "--from-manifest", tmp_path / "out")
    assert differs.returncode == 1, differs.stderr[-3000:]
    assert "DIFFER" in differs.stdout and "1 of 4 files differ" in differs.stderr
