"""What a device's runner says about it, turned into the report's ``device`` record, a summary line, and the exact
fix when something the runner needs is missing."""

from __future__ import annotations

from edge_tool.evaluate.device.url import DeviceURL

WHEEL_HINT = (
    "or, on a device without internet, `pip download --platform manylinux2014_{machine} "
    "--only-binary=:all: --python-version {py} ai-edge-litert` on another machine, copy the wheel over "
    "and `{python} -m pip install ./ai_edge_litert-*.whl` there"
)


def device_record(url: DeviceURL, hello: dict) -> dict:
    """The row's ``device`` object: where it ran and on what (empty facts when the device never answered)."""
    return {
        "url": url.url,
        "machine": hello.get("machine"),
        "system": hello.get("system"),
        "cpu": hello.get("cpu"),
        "cores": hello.get("cores"),
        "runtime": hello.get("runtime"),
        "runtime_version": hello.get("runtime_version"),
        "python": hello.get("python"),
        "emulated": hello.get("emulated"),
        "emulation": list(hello.get("emulation") or []),
    }


def missing_runtime(hello: dict, python: str = "python3") -> str:
    """Why the device cannot run a .tflite, and the command that fixes it."""
    machine = hello.get("machine") or "aarch64"
    py = (hello.get("python") or "3").rsplit(".", 1)[0]
    if hello.get("numpy") is None:
        need = "numpy and no TFLite runtime"
        fix = f"`{python} -m pip install numpy ai-edge-litert` on the device"
    else:
        need = "TFLite runtime"
        fix = f"`{python} -m pip install ai-edge-litert` (or `tflite-runtime`) on the device"
    tried = "; ".join(hello.get("runtime_errors") or [])
    return f"the device has no {need} for Python {hello.get('python')} ({tried}); fix: {fix}, " + WHEEL_HINT.format(
        machine=machine, py=py, python=python
    )


def describe(record: dict) -> str:
    """One line for the table's device column: machine and host, and whether it is emulated."""
    name = record["url"].split("://", 1)[-1].split("?", 1)[0]
    machine = record.get("machine") or "unreachable"
    return f"{name} ({machine}{', emulated' if record.get('emulated') else ''})"


def emulation_note(record: dict) -> str | None:
    """The report's warning for a device that runs under an emulator, with the evidence; None otherwise."""
    if not record.get("emulated"):
        return None
    return (
        f"{describe(record)} runs under emulation ({'; '.join(record.get('emulation') or [])}): its latency and "
        "memory are the emulator's, not a performance figure of that CPU; its outputs and accuracy are the "
        "device runtime's own."
    )


def device_label(record: dict | None) -> str:
    """The table's device column (the row's label names the device): "host" for a row measured here."""
    if record is None:
        return "host"
    return f"{record.get('machine') or 'unreachable'}{' (emulated)' if record.get('emulated') else ''}"


def device_notes(results) -> list[str]:
    """Footer lines: one emulation warning per emulated device (once each)."""
    notes = []
    for r in results:
        note = emulation_note(r.device) if r.device else None
        if note and note not in notes:
            notes.append(note)
    return notes


def with_device_cells(rows: list[list[str]], results) -> list[list[str]]:
    """The table ``rows`` (reference first) with a device cell each when any result ran on a --device."""
    if any(r.device is not None for r in results):  # a --device row: every row names where it ran
        for row, r in zip(rows, (None, *results)):
            row.append(device_label(r and r.device))
    return rows


def missing_tflm(hello: dict, python: str = "python3") -> str:
    """Why the device cannot run ``--runtime tflm``, and the way to get TFLite Micro's Python package there."""
    machine = hello.get("machine") or "?"
    where = (
        "PyPI has it for x86_64 Linux only; on an ARM board build the wheel from the tflite-micro sources "
        "(`bazel build //python/tflite_micro:whl.dist`) and install it there"
    )
    return (
        f"the device has no TFLite Micro Python package for Python {hello.get('python')} on {machine} "
        f"({hello.get('tflm_error') or 'tflite_micro does not import'}); fix: `{python} -m pip install "
        f"tflite-micro` on the device ({where}), or drop --runtime tflm to measure with the device's LiteRT"
    )
