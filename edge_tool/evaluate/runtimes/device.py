"""The ``device`` runtime (``eval --device ssh://…``): each .tflite artefact also runs on a device, a row of its own.

A thin registration of ``evaluate.device`` (its runner, its facts): it is not a ``--runtime`` choice, it adds rows
(``open_extra``) beside the host's; its rows say where they ran in a ``device`` column and record.
"""

from __future__ import annotations

from edge_tool.evaluate.device.facts import device_label, device_notes
from edge_tool.evaluate.device.fleet import open_device_runners
from edge_tool.evaluate.device.spread import spread_notes
from edge_tool.evaluate.runtimes.registry import RUNTIMES, Column, RuntimeSpec
from edge_tool.models.formats import ArtifactFormat

SPEC = RUNTIMES.register(
    RuntimeSpec(
        name="device",
        formats=(ArtifactFormat.TFLITE.value,),
        open_extra=open_device_runners,
        summary="the device's own LiteRT / tflite-runtime over SSH (--device), a row per artefact and device",
        claims=lambda r: r.device is not None,
        result_fields=("device",),
        facts=lambda results: device_notes(results) + spread_notes(results),
        columns=(
            Column("device", lambda r: device_label(r.device), reference=device_label(None), numeric=False, width=40),
        ),
    )
)
