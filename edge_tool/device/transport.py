"""One SSH connection per device through the system OpenSSH client: ``~/.ssh/config``, agents, jump hosts and
``known_hosts`` work as the user set them up; host keys are verified whatever that config says
(``StrictHostKeyChecking=yes`` and ``BatchMode=yes`` on the command line win over it: an unknown or a changed key is
a refusal, never a prompt, never accepted silently), and the two cases are told apart with ssh's own warning.

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
from edge_tool.core.textsafe import visible
from edge_tool.device.url import DeviceURL
from edge_tool.errors import RuntimeFailure, UsageError
from edge_tool.litert.isolated import last_message

CONFIG_ENV = "EDGETOOL_SSH_CONFIG"
CONNECT_TIMEOUT_S = 20
MIN_PYTHON = (3, 8)
TOO_OLD = "edgetool-device-runner needs Python >= 3.8"
# The remote command line is this fixed text; only the validated ?python= path is put in, shell-quoted. It runs in
# the user's own environment (no -I: user site, PYTHONPATH and venvs count, as for the user's app) but first drops
# the working directory from sys.path, so nothing planted where the session starts can be imported; and it parses
# on old Pythons (3.6, 3.7) far enough to say which version it needs.
BOOTSTRAP = (
    "import sys;sys.path[:]=[p for p in sys.path if p not in ('','.')];"
    "n=int(sys.stdin.buffer.readline());s=sys.stdin.buffer.read(n);"
    f"sys.version_info<{MIN_PYTHON!r} and sys.exit('{TOO_OLD}; this is Python '+sys.version.split()[0]);"
    "exec(compile(s,'edgetool-device-runner','exec'))"
)
LOG_TAIL = 1 << 16  # bytes of ssh's own messages kept


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
            "StrictHostKeyChecking=yes",
            "-o",
            "LogLevel=ERROR",
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
                raise RuntimeFailure(self.refusal())
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

    def _log_text(self) -> str:
        self._log.flush()
        size = self._log.seek(0, 2)
        self._log.seek(max(0, size - LOG_TAIL))
        return visible(self._log.read().decode("utf-8", "replace"))

    def master_error(self) -> str:
        """The master's last message (why it could not connect, or why the connection ended)."""
        return last_message(self._log_text()) or "the ssh connection ended"

    def refusal(self) -> str:
        """Why the master could not connect: a changed host key (ssh's man-in-the-middle warning kept), an
        unknown one (how to check and add it), or ssh's last message."""
        return (
            host_key_refusal(self.url, self._log_text())
            or f"cannot reach {self.url.name} over ssh: {self.master_error()}"
        )

    @property
    def alive(self) -> bool:
        """True while the master connection runs."""
        return self._master is not None and self._master.poll() is None

    def session(self, stderr) -> subprocess.Popen:
        """A runner on the device: the user's Python reading its program from stdin (``BOOTSTRAP``), over the
        master connection."""
        if not self.alive:
            raise RuntimeFailure(f"lost the connection to {self.url.name}: {self.master_error()}")
        remote = f"exec {shlex.quote(self.url.python)} -c {shlex.quote(BOOTSTRAP)}"
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


def host_key_refusal(url: DeviceURL, said: str) -> str | None:
    """The message for a host key ssh refused (``said``: its output), or None when that was not the reason."""
    where = f"-p {url.port} " if url.port else ""
    login = f"ssh {where}{url.user + '@' if url.user else ''}{url.host}"
    if "HOST IDENTIFICATION HAS CHANGED" in said or "Host key for" in said and "has changed" in said:
        warning = " ".join(ln.strip(" @") for ln in said.splitlines() if ln.strip(" @"))[:1500]
        return (
            f"refused to connect to {url.name}: its host key has CHANGED since your known_hosts recorded it. "
            "Someone could be intercepting the connection (a man-in-the-middle attack), or the device was "
            "reinstalled; edgetool would send it a model and run a program there, so it does not connect whatever "
            "your ssh config says. If you know why the key changed, remove the old key (`ssh-keygen -R "
            f"{'[' + url.host + ']:' + str(url.port) if url.port else url.host}`), check the new fingerprint "
            f"against the device's own (`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub` on it) and log in once "
            f"by hand (`{login}`). ssh said: {warning}"
        )
    if "Host key verification failed" in said or "host key is known for" in said:
        return (
            f"refused to connect to {url.name}: its host key is not in your known_hosts (unknown device), and "
            f"edgetool never accepts a key it cannot verify. Log in once by hand (`{login}`), compare the "
            "fingerprint ssh shows with the device's own, accept it, then run again. ssh said: "
            f"{last_message(said) or 'Host key verification failed.'}"
        )
    return None
