"""The device's facts for the runner's ``hello``, sent with ``board_runner`` (no edgetool import here either): CPU,
memory, emulation evidence, the interpreter's import path, and whether its TFLite runtime really runs a model (an
interpreter created and invoked on a tiny built-in model, with whatever the runtime printed while importing)."""

from __future__ import annotations

import os
import platform
import shutil
import sys
import tempfile

# machine (uname -m) -> qemu-user's name for it (its binary and binfmt_misc entry: qemu-arm runs armv7l)
QEMU_NAMES = {"armv6l": "arm", "armv7l": "arm", "armv8l": "arm", "i386": "i386", "i686": "i386"}
# y = 2x + 1 on a float32 [1, 4] tensor (a 948-byte .tflite, zlib + base64)
SELFTEST = "eNptU70vA3EYftsebdILTdXHYDCY65tIBA2VNNE2qUZMSnI3NGmvUtdGJ/4Ig8FgEDEYDAaj2ShGNoMB/wHneX/33uHiTZ/c757f835fh4movLY+laIRGqYhSlGCdHAx0nAmcC5s1oWIDKAcIcJPWRiYBjTgyXGcqJz7gJViYTNb2sgVC5V8tpxZzZQziKur2DHcd//S1qtWpdmy7GrdrLTN5n61YSnNE/AI3AHnwClwLPWw7zZy8nMHSEhNMerxczA3qthuxXk52XS/X031PGceXg/OPr9HpC9NapxMT8ynx4nuJRfHnEjPMOXbzafj3AIfopEcy8G8Ln+09ALtK9CLt/x6rjSy0rDQt20aacKI1ewJfXgVcowe4XkfZzKPS4lZ361a3j62/vGP//KHxRNy5lx7X44TkjjsHxGe/VOq3x9/mXG/Lucr8fVm5tXgxQsJ1wW8Sc22Oxh1v4h5sSwh8Vg3xHfgeX85w8RHYXeCcdsBP28vC+C5lnqr9kd/EdBHpP8a+C5XP9aRWh8C2rBoT0S7axi+lmhAzZhkS65FwSrzY4Tkyf8RPh8E+gnLXmPqXVOcruZOiuF5J92YyW+ozHx2"
TAIL = 4000  # characters kept of what a runtime printed while importing


def _has_proc() -> bool:
    return os.path.isdir("/proc/1") or os.path.isdir("/proc/%d" % os.getpid())


def _cpu():
    fields = {}
    try:
        with open("/proc/cpuinfo", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip().lower()[:64], value.strip()[:200])
                if len(fields) > 200:
                    break
    except OSError:
        pass
    name = fields.get("model name") or fields.get("hardware") or fields.get("cpu model") or ""
    if not name and "cpu part" in fields:
        name = "implementer %s part %s" % (fields.get("cpu implementer", "?"), fields["cpu part"])
    return name or platform.processor() or platform.machine(), fields


def _emulation(machine: str, cpu_fields: dict) -> list:
    """What says this Python runs under an emulator (qemu-user) rather than on a CPU of its own architecture."""
    found = sorted(k for k in os.environ if k.startswith("QEMU_"))
    evidence = ["environment sets %s" % ", ".join(found)] if found else []
    x86 = "vendor_id" in cpu_fields or "GenuineIntel" in str(cpu_fields.values())
    if machine.startswith(("aarch64", "arm")) and x86:
        evidence.append(
            "/proc/cpuinfo describes an x86 CPU (%s) while Python runs as %s"
            % (cpu_fields.get("model name", cpu_fields.get("vendor_id")), machine)
        )
    for path in ("/proc/self/maps", "/proc/%d/maps" % os.getppid()):
        try:
            with open(path, errors="replace") as f:
                if "qemu" in f.read(1 << 22):
                    evidence.append("%s maps a qemu binary" % path)
        except OSError:
            pass
    qemu = "qemu-" + QEMU_NAMES.get(machine, machine)
    try:
        with open("/proc/sys/fs/binfmt_misc/" + qemu) as f:
            if f.readline().strip() == "enabled":
                evidence.append("binfmt_misc runs %s binaries through %s" % (machine, qemu))
    except OSError:
        pass
    return evidence


def _meminfo() -> dict:
    """MemTotal / MemAvailable in bytes from /proc/meminfo (None each without it: never a guess)."""
    found = {"MemTotal": None, "MemAvailable": None}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key = line.split(":", 1)[0]
                if key in found:
                    found[key] = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return found


def _captured(fn):
    """(fn()'s result, the exception it raised or None, the last TAIL characters it printed on fd 2)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        result = error = None
        try:
            result = fn()
        except Exception as exc:
            error = exc
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        size = tmp.seek(0, 2)
        tmp.seek(max(0, size - TAIL))
        said = tmp.read().decode("utf-8", "replace")
    return result, error, said


def _first_line(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).splitlines() if ln.strip()]
    return "%s: %s" % (type(exc).__name__, lines[0][:500] if lines else "")


def _selftest(cls) -> None:
    """Create an interpreter from the built-in model, invoke it, check 2x + 1 (any failure raises)."""
    import base64
    import zlib

    import numpy as np

    it = cls(model_content=zlib.decompress(base64.b64decode(SELFTEST)))
    it.allocate_tensors()
    i, o = it.get_input_details()[0], it.get_output_details()[0]
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    it.set_tensor(i["index"], x)
    it.invoke()
    y = it.get_tensor(o["index"])
    if not np.allclose(y, 2 * x + 1):
        raise RuntimeError("the runtime computed %r for 2x + 1 at x = %r" % (y.tolist(), x.tolist()))


def _runtime():
    """(Interpreter class or None, name, version, why each runtime failed, why the one found cannot run a model):
    the first runtime that runs the built-in model, else the first that imports (with why it cannot run)."""
    import importlib

    tried, broken = [], None
    for name, module, dist in RUNTIMES:
        mod, exc, said = _captured(lambda m=module: importlib.import_module(m))
        cls = getattr(mod, "Interpreter", None)
        if cls is None:
            tried.append("%s: %s" % (dist, _first_line(exc) if exc else "no Interpreter"))
            continue
        try:
            from importlib.metadata import version

            ver = version(dist)
        except Exception:
            ver = "unknown"
        _, failed, said_more = _captured(lambda c=cls: _selftest(c))
        if failed is None:
            return cls, name, ver, tried, None
        printed = [ln.strip() for ln in (said + said_more).splitlines() if ln.strip()]
        why = _first_line(failed)
        causes = [ln for ln in printed if "rror" in ln or "compiled against" in ln]
        if causes or printed:
            why += " (while importing and running it printed: %s)" % " | ".join((causes or printed)[-3:])[-1500:]
        tried.append("%s %s: cannot run a model: %s" % (dist, ver, why[:300]))
        broken = broken or (cls, name, ver, why)
    if broken:
        return broken[0], broken[1], broken[2], tried, broken[3]
    return None, None, None, tried, None


def interpreter_facts() -> dict:
    """Which interpreter runs the runner, where it imports from, and who runs it (for a fix that works there)."""
    import site
    import sysconfig

    prefix, base = sys.prefix, getattr(sys, "base_prefix", sys.prefix)
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    managed = os.path.isfile(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
    return {
        "executable": sys.executable[:500],
        "venv": prefix != base,
        "managed": managed and prefix == base,  # PEP 668: pip refuses to install into it, --user included
        "home": os.path.expanduser("~")[:300],
        "prefix": prefix[:500],
        "root": hasattr(os, "getuid") and os.getuid() == 0,
        "user_site": user_site[:500] if isinstance(user_site, str) else None,
        "sys_path": [p[:300] for p in sys.path[:40]],
    }


def facts() -> dict:
    """The device as the runner sees it (the ``hello`` frame); the runtime's class kept in ``_state``."""
    machine = platform.machine()
    proc = _has_proc()
    cpu, fields = _cpu()
    cls, runtime, ver, tried, broken = _runtime()
    _state["cls"] = cls if broken is None else None
    try:
        import numpy

        numpy_version = numpy.__version__
    except ImportError:
        numpy_version = None
    usage = shutil.disk_usage(_state["tmp"] or tempfile.gettempdir())
    evidence = _emulation(machine, fields) if proc else []
    mem = _meminfo()
    return {
        "hello": True,
        "machine": machine,
        "system": "%s %s" % (platform.system(), platform.release()),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "proc": proc,
        "memory_bytes": mem["MemTotal"],
        "memory_available_bytes": mem["MemAvailable"],
        "free_disk_bytes": usage.free,
        "python": platform.python_version(),
        "numpy": numpy_version,
        "runtime": runtime,
        "runtime_version": ver,
        "runtime_errors": tried,
        "runtime_broken": broken,
        "emulated": bool(evidence) if proc else None,
        "emulation": evidence if proc else ["unknown: the device has no /proc"],
        "tmp": _state["tmp"],
        **interpreter_facts(),
        **tflm_facts(),
    }
