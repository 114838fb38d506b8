"""``--custom-objects`` (issue 40, items 1 and 2): a module never decides edgetool's exit code, and a spec is checked
before anything is imported.

Each case runs a real edgetool in a directory holding the hostile module, ``evil.py`` (which writes ``RAN`` when
imported) and a FIFO/directory named like a module file; every run must exit 2 with a message naming what was
wrong, print nothing on stdout, and leave no ``RAN`` behind where the spec should not have been imported.
"""

from __future__ import annotations

import os

import pytest

from tests.edgetool_runs import edgetool_process

MODULES = {
    "exit0.py": "import sys\nsys.exit(0)\n",
    "exit3.py": "import sys\nsys.exit(3)\n",
    "os_exit.py": "import os\nos._exit(0)\n",
    "base.py": "class Boom(BaseException):\n    pass\nraise Boom('boom')\n",
    "evil.py": "open('RAN', 'w').close()\n",
}
CASES = {  # spec -> words the message must hold
    "exit0.py": "sys.exit(0)",
    "exit3.py": "sys.exit(3)",
    "os_exit.py": "os._exit()",
    "base.py": "Boom: boom",
    "": "is empty",
    "evil..": "neither an existing .py file nor a dotted module name",
    "evil.py.": "neither an existing .py file nor a dotted module name",
    "pipe.py": "a FIFO (named pipe)",
    "folder.py": "is a directory",
    "folder": "is a directory",
    "missing.py": "no such file",
}


@pytest.fixture
def module_dir(tmp_path):
    for name, code in MODULES.items():
        (tmp_path / name).write_text(code)
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "folder.py").mkdir()
    (tmp_path / "folder").mkdir()
    (tmp_path / "model.tflite").write_bytes(b"\0" * 64)
    return tmp_path


@pytest.mark.parametrize("command", ["inspect", "convert"])
@pytest.mark.parametrize("spec", list(CASES))
def test_a_custom_objects_module_never_sets_the_exit_code_and_bad_specs_import_nothing(module_dir, spec, command):
    args = [command, "model.tflite", "--custom-objects", spec, "--trust-model-code"]
    if command == "convert":
        args += ["-o", "out"]
    proc = edgetool_process(args, dict(os.environ), module_dir, timeout=300)
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, (proc.returncode, said)
    assert "--custom-objects" in said and CASES[spec] in said, said
    assert not proc.stdout.strip(), proc.stdout
    assert not (module_dir / "RAN").exists() and not (module_dir / "out").exists()
