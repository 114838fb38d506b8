"""What a device's runner says about it, turned into the report's ``device`` record, a summary line, and the exact
fix when something the runner needs is missing."""

from __future__ import annotations

from edge_tool.device.url import DeviceURL

WHEEL_ARCHS = ("aarch64", "x86_64")  # where PyPI has ai-edge-litert and numpy wheels
ARM32 = ("armv6l", "armv7l", "armv8l")  # 32-bit ARM: no ai-edge-litert and no numpy wheel on PyPI


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


def measured_note(hello: dict) -> str:
    """The device row's latency note: where it was measured, and whether that is a performance figure."""
    if hello.get("emulated"):
        return "measured on the device under emulation (qemu): not a performance figure"
    if hello and hello.get("emulated") is None:
        return "measured on the device (emulation unknown: the device has no /proc)"
    return "measured on the device"


def runtime_usable(hello: dict) -> bool:
    """True when the device's runtime imported and ran the runner's built-in model (an interpreter created and
    invoked), not merely imported."""
    return hello.get("runtime") is not None and not hello.get("runtime_broken")


def _pip(hello: dict, python: str) -> tuple[str, str, str]:
    """(what to do first, the pip command that installs where the runner will find it, what to do after)."""
    if hello.get("venv"):
        return "", f"{hello.get('prefix')}/bin/python -m pip install", ""  # the venv's own pip
    if hello.get("managed"):  # PEP 668 (Debian 12, Raspberry Pi OS Bookworm): pip refuses, --user included
        env = f"{hello.get('home') or '/home/USER'}/litert"
        return (
            f"`{python} -m venv --system-site-packages {env}` (this Python is externally managed: its pip refuses "
            "to install, --user included; on Debian `sudo apt install python3-venv` first), then ",
            f"{env}/bin/python -m pip install",
            f", and name that Python: --device '…?python={env}/bin/python'",
        )
    if hello.get("root") is False:
        return "", f"{python} -m pip install --user", ""  # a non-root login: the user site (the runner sees it)
    return "", f"{python} -m pip install", ""


def _fix(hello: dict, python: str, numpy_ok: bool) -> str:
    """The install that works for this interpreter, architecture and numpy."""
    machine, (first, pip, after) = hello.get("machine") or "?", _pip(hello, python)
    py = (hello.get("python") or "3").rsplit(".", 1)[0]
    if machine in ARM32:
        numpy = hello.get("numpy")
        old = numpy is not None and tuple(int(p) for p in numpy.split(".")[:2] if p.isdigit()) < (1, 20)
        runtime = "tflite-runtime==2.11.0" if old or numpy is None else "tflite-runtime"
        apt = "" if numpy_ok else f"`sudo apt install python3-numpy` (PyPI has no numpy wheel for {machine}), then "
        return (
            f"{apt}{first}`{pip} {runtime}`{after} (PyPI has no ai-edge-litert for {machine}; tflite-runtime 2.11 is "
            "the newest armv7l wheel built against numpy < 1.20, newer ones need numpy ≥ 1.20 and fail with 'module "
            "compiled against API version'), or a tflite-runtime wheel built on the board for its own Python, glibc "
            "and numpy"
        )
    pkgs = "ai-edge-litert" if numpy_ok else "numpy ai-edge-litert"
    if machine not in WHEEL_ARCHS:
        return (
            f"PyPI has no ai-edge-litert or tflite-runtime wheel for {machine}: build tflite-runtime for the board "
            f"(Python {py}) from the TensorFlow sources, then {first}`{pip} ./tflite_runtime-*.whl`{after}"
        )
    return (
        f"{first}`{pip} {pkgs}` (or `tflite-runtime`) on the device{after}; on a device without internet, `pip "
        f"download --platform manylinux2014_{machine} --only-binary=:all: --python-version {py} {pkgs}` on another "
        f"machine, copy the wheels over and `{pip} ./*.whl` there"
    )


def missing_runtime(hello: dict, python: str = "python3") -> str:
    """Why the device cannot run a .tflite (no runtime, or one that imports but cannot run a model), with the
    interpreter's import path and the install that fixes it there."""
    where = f"{hello.get('executable') or python} (Python {hello.get('python')})"
    broken = hello.get("runtime_broken")
    if broken:
        return (
            f"the device's {hello.get('runtime')} {hello.get('runtime_version')} imports in {where} but cannot run "
            f"a model: {broken}; fix: {_fix(hello, python, numpy_ok=True)}"
        )
    need = "numpy and no TFLite runtime" if hello.get("numpy") is None else "TFLite runtime"
    tried = "; ".join(hello.get("runtime_errors") or [])
    path = ", ".join(p or "''" for p in hello.get("sys_path") or [])
    return (
        f"the device has no {need} for {where} ({'tried: ' + tried + '; ' if tried else ''}its sys.path: "
        f"{path or 'unknown'}); fix: "
        f"{_fix(hello, python, numpy_ok=hello.get('numpy') is not None)}"
    )


def describe(record: dict) -> str:
    """One line for the table's device column: machine and host, and whether it is emulated."""
    name = record["url"].split("://", 1)[-1].split("?", 1)[0]
    machine = record.get("machine") or "unreachable"
    return f"{name} ({machine}{', emulated' if record.get('emulated') else ''})"


def emulation_note(record: dict) -> str | None:
    """The report's warning for a device that runs under an emulator, with the evidence; None otherwise."""
    if record.get("emulated") is None and record.get("machine"):
        return (
            f"{describe(record)}: emulation and memory unknown ({'; '.join(record.get('emulation') or [])}): treat "
            "its latency as real only if you know it runs on its own CPU."
        )
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
