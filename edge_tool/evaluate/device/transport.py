"""One SSH connection per device through the system OpenSSH client: ``~/.ssh/config``, agents, jump hosts and
``known_hosts`` work as the user set them up; host keys are verified (BatchMode: an unknown or changed key is a
refusal, never a prompt, never accepted silently).

The master connection (ControlMaster, its socket in a private temp dir, ControlPersist off) runs the fixed remote
command ``cat >/dev/null`` fed by this process: if edgetool dies however it dies, the pipe closes, that command ends
and so does the master. Every runner is a session multiplexed over it. ``EDGETOOL_SSH_CONFIG`` names an ssh config
file to use instead of ``~/.ssh/config`` (``ssh -F``).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from edge_tool.core.signals import deferred
from edge_tool.errors import RuntimeFailure, UsageError
from edge_tool.evaluate.device.url import DeviceURL
from edge_tool.litert.isolated import last_message

CONFIG_ENV = "EDGETOOL_SSH_CONFIG"
CONNECT_TIMEOUT_S = 20
# the remote command line is this fixed text; only the validated ?python= path is put in, shell-quoted
BOOTSTRAP = (
    "import sys;n=int(sys.stdin.buffer.readline());"
    "exec(compile(sys.stdin.buffer.read(n),'edgetool-device-runner','exec'))"
)


def ssh_config_args() -> list[str]:
    """``-F FILE`` when EDGETOOL_SSH_CONFIG is set (UsageError if it names no file)."""
    path = os.environ.get(CONFIG_ENV)
    if not path:
        return []
    if not Path(path).is_file():
        raise UsageError(f"{CONFIG_ENV} must name an ssh config file, but {path!r} is not a file.")
    return ["-F", path]


class SshDevice:
    """The master connection to one device; ``session()`` starts a runner over it."""

    def __init__(self, url: DeviceURL):
        if shutil.which("ssh") is None:
            raise RuntimeFailure(
                "the OpenSSH client (ssh) is not on PATH; install it (e.g. apt install "
                "openssh-client) to measure on a device"
            )
        self.url = url
        base = tempfile.gettempdir()  # a socket path must stay short (~100 bytes) and free of ssh's %-tokens
        self._dir = tempfile.mkdtemp(
            prefix="edgetool-ssh-", dir="/tmp" if (len(base) > 60 or "%" in base) and os.path.isdir("/tmp") else None
        )
        self._socket = os.path.join(self._dir, "control")
        self._log = open(os.path.join(self._dir, "master.log"), "w+b")
        self._master: subprocess.Popen | None = None
        self.closed = False

    def _base(self) -> list[str]:
        # the user's config decides how to reach the host; these decide what the connection may do
        args = [
            "ssh",
            *ssh_config_args(),
            "-T",
            "-e",
            "none",
            "-o",
            "BatchMode=yes",
            "-o",
            f"ControlPath={self._socket}",
            "-o",
            "ClearAllForwardings=yes",
            "-o",
            "ForwardAgent=no",
            "-o",
            "ForwardX11=no",
            "-o",
            "RemoteCommand=none",
            "-o",
            "PermitLocalCommand=no",
        ]
        if self.url.user:
            args += ["-l", self.url.user]
        if self.url.port:
            args += ["-p", str(self.url.port)]
        return args

    def open(self) -> None:
        """Connect (the master); RuntimeFailure with ssh's own reason when the device cannot be reached."""
        cmd = [
            *self._base(),
            "-o",
            "ControlMaster=yes",
            "-o",
            "ControlPersist=no",
            "-o",
            f"ConnectTimeout={CONNECT_TIMEOUT_S}",
            "-o",
            "ServerAliveInterval=10",
            "-o",
            "ServerAliveCountMax=3",
            "--",
            self.url.host,
            "exec cat >/dev/null",
        ]
        with deferred():
            self._master = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._log)
        deadline = time.monotonic() + CONNECT_TIMEOUT_S + 10
        while time.monotonic() < deadline:
            if self._master.poll() is not None:
                raise RuntimeFailure(f"cannot reach {self.url.name} over ssh: {self.master_error()}")
            if os.path.exists(self._socket) and self._check():
                return
            time.sleep(0.1)
        raise RuntimeFailure(f"cannot reach {self.url.name} over ssh: no connection after {CONNECT_TIMEOUT_S + 10} s")

    def _check(self) -> bool:
        done = subprocess.run(
            [*self._base(), "-O", "check", "--", self.url.host],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
            timeout=30,
        )
        return done.returncode == 0

    def master_error(self) -> str:
        """The master's last message (why it could not connect, or why the connection ended)."""
        self._log.flush()
        self._log.seek(0)
        text = self._log.read().decode("utf-8", "replace")
        return last_message(text) or "the ssh connection ended"

    @property
    def alive(self) -> bool:
        """True while the master connection runs."""
        return self._master is not None and self._master.poll() is None

    def session(self, stderr) -> subprocess.Popen:
        """A runner on the device: ``python -I`` reading its program from stdin, over the master connection."""
        if not self.alive:
            raise RuntimeFailure(f"lost the connection to {self.url.name}: {self.master_error()}")
        remote = f"exec {shlex.quote(self.url.python)} -I -c {shlex.quote(BOOTSTRAP)}"
        cmd = [*self._base(), "-o", "ControlMaster=no", "--", self.url.host, remote]
        with deferred():
            return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)

    def close(self) -> None:
        """End the master connection and remove its socket dir (idempotent)."""
        if self.closed:
            return
        self.closed = True
        if self._master is not None:
            if self._master.poll() is None:
                try:
                    self._master.stdin.close()  # the remote `cat` ends; the master follows
                    self._master.wait(timeout=5)
                except (OSError, subprocess.TimeoutExpired):
                    self._master.terminate()
                    try:
                        self._master.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        self._master.kill()
                        self._master.wait()
        self._log.close()
        shutil.rmtree(self._dir, ignore_errors=True)
