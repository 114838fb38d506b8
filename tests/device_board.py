"""An emulated aarch64 board for the ``--device`` tests: a Debian arm64 userland whose programs run under
qemu-aarch64-static (binfmt_misc), with aarch64 wheels of tflite-runtime 2.14 and numpy 1.26, reached through a real
sshd on 127.0.0.1 (generated host and client keys, key auth only, the session chrooted into the userland).

Built once and cached (``~/.cache/edgetool/board-<key>``, the key hashing this recipe, the qemu and debootstrap
versions and the wheel pins), from Debian's and PyPI's packages only:
1. ``debootstrap --arch=arm64 --foreign --variant=minbase --include=python3`` resolves and downloads the arm64
   packages and unpacks the base; instead of the second stage (every maintainer script run under qemu: minutes) the
   remaining downloaded .debs are unpacked with ``dpkg-deb -x`` (python3.11 needs no maintainer script to run).
2. ``pip download --platform manylinux_2_34_aarch64 --only-binary=:all:`` fetches the wheels, unzipped into
   ``/usr/local/lib/python3.11/dist-packages`` of the userland.
tflite-runtime, not ai-edge-litert: ai-edge-litert 2.3's aarch64 wheel segfaults at ``Interpreter()`` under
qemu-user, tflite-runtime 2.14 runs.

Needs root (chroot, binfmt_misc, mount), qemu-user-static, debootstrap and openssh-server (.ci/run installs them).
"""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

RECIPE = "board-v1"
SUITE, MIRROR = "bookworm", os.environ.get("EDGETOOL_BOARD_MIRROR", "http://deb.debian.org/debian")
WHEELS = ("tflite-runtime==2.14.0", "numpy==1.26.4")
QEMU = "/usr/bin/qemu-aarch64-static"
BINFMT = Path("/proc/sys/fs/binfmt_misc")
TOOLS = {QEMU: "qemu-user-static", "/usr/sbin/debootstrap": "debootstrap", "/usr/sbin/sshd": "openssh-server"}


def missing() -> str | None:
    """Why the board cannot be built here, or None."""
    if os.geteuid() != 0:
        return "the emulated board needs root (chroot, binfmt_misc)"
    absent = [pkg for tool, pkg in TOOLS.items() if not Path(tool).exists()]
    return f"install {' '.join(absent)} (apt-get install)" if absent else None


def _version(pkg: str) -> str:
    return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True).stdout


def cache_dir() -> Path:
    """Where this recipe's board lives (root-owned, no group/world write: sshd's ChrootDirectory insists)."""
    key = hashlib.sha256(
        repr((RECIPE, SUITE, WHEELS, _version("qemu-user-static"), _version("debootstrap"))).encode()
    ).hexdigest()[:12]
    base = Path(os.environ.get("EDGETOOL_BOARD_CACHE", Path.home() / ".cache" / "edgetool"))
    return base / f"board-{key}"


def _run(cmd: list, **kw) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}): {proc.stdout[-2000:]}{proc.stderr[-2000:]}")


def build(target: Path) -> Path:
    """The board's root file system at ``target/root`` (built beside and renamed when complete)."""
    if (target / "root" / "usr" / "bin" / "python3").exists():
        return target / "root"
    tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    root = tmp / "root"
    tmp.mkdir(parents=True, mode=0o755)
    _run(
        [
            "debootstrap",
            "--arch=arm64",
            "--foreign",
            "--variant=minbase",
            "--include=python3",
            SUITE,
            str(root),
            MIRROR,
        ],
        timeout=900,
    )
    archives = root / "var" / "cache" / "apt" / "archives"
    for deb in sorted(archives.glob("*.deb")):
        _run(["dpkg-deb", "-x", str(deb), str(root)])
        deb.unlink()
    for name in ("passwd", "group"):
        shutil.copy(root / "usr" / "share" / "base-passwd" / f"{name}.master", root / "etc" / name)
    wheels = tmp / "wheels"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--only-binary=:all:",
            "--platform",
            "manylinux_2_34_aarch64",
            "--platform",
            "manylinux2014_aarch64",
            "--python-version",
            "3.11",
            "--implementation",
            "cp",
            "--abi",
            "cp311",
            "-d",
            str(wheels),
            *WHEELS,
        ],
        timeout=600,
    )
    site = root / "usr" / "local" / "lib" / "python3.11" / "dist-packages"
    site.mkdir(parents=True, exist_ok=True)
    for whl in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(whl) as z:
            z.extractall(site)
    shutil.rmtree(wheels)
    if target.exists():
        shutil.rmtree(target)
    tmp.rename(target)
    return target / "root"


def enable_binfmt() -> None:
    """Register qemu-aarch64 with binfmt_misc (Debian's own entry, flag F: works inside a chroot) if needed."""
    if not (BINFMT / "register").exists():
        _run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)])
    entry = BINFMT / "qemu-aarch64"
    if not entry.exists():
        conf = Path("/usr/lib/binfmt.d/qemu-aarch64.conf").read_text()
        (BINFMT / "register").write_text("".join(ln for ln in conf.splitlines() if not ln.startswith("#")))
    elif "enabled" not in entry.read_text():
        entry.write_text("1")


def binfmt_problem() -> str | None:
    """Why aarch64 programs cannot be run here through binfmt_misc (after trying to enable it), or None."""
    try:
        enable_binfmt()
    except (OSError, RuntimeError) as exc:
        return f"binfmt_misc cannot run aarch64 programs through qemu here: {exc}"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Board:
    """A running board: its root file system, sshd, and the client side (ssh config with key and known_hosts)."""

    root: Path
    home: Path
    port: int
    sshd: subprocess.Popen
    mounted_proc: bool = False

    @property
    def url(self) -> str:
        """The --device URL."""
        return f"ssh://root@127.0.0.1:{self.port}"

    @property
    def ssh_config(self) -> Path:
        """The client's ssh config (EDGETOOL_SSH_CONFIG / ``ssh -F``)."""
        return self.home / "ssh_config"

    def ssh(self, command: str, stdin: bytes | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        """Run ``command`` on the board with plain ssh (not edgetool's code)."""
        return subprocess.run(
            ["ssh", "-F", str(self.ssh_config), "-p", str(self.port), "root@127.0.0.1", command],
            input=stdin,
            capture_output=True,
            timeout=timeout,
        )

    def runner_processes(self) -> list[int]:
        """Pids of edgetool runners alive on the board: processes chrooted into it (seen from the host, whose
        processes the board's are) whose command line carries the runner's bootstrap."""
        pids = []
        for proc in Path("/proc").iterdir():
            try:
                if (
                    proc.name.isdigit()
                    and os.readlink(proc / "root") == str(self.root)
                    and b"edgetool-device-runner" in (proc / "cmdline").read_bytes()
                ):
                    pids.append(int(proc.name))
            except OSError:
                continue
        return pids

    def temp_dirs(self) -> list[Path]:
        """Runner temp dirs left in the board's /tmp."""
        return sorted((self.root / "tmp").glob("edgetool-device-*"))

    def kill_sshd(self) -> None:
        """SIGKILL the board's sshd: the listener and every sshd session process under it (the runners live on)."""
        parents = {}
        for proc in Path("/proc").iterdir():
            try:
                if proc.name.isdigit():
                    stat = (proc / "stat").read_text()
                    parents[int(proc.name)] = (
                        int(stat.rsplit(")", 1)[1].split()[1]),
                        stat[stat.index("(") + 1 : stat.rindex(")")],
                    )
            except (OSError, ValueError):
                continue
        doomed, grew = {self.sshd.pid}, True
        while grew:
            more = {p for p, (pp, comm) in parents.items() if pp in doomed and comm == "sshd"} - doomed
            doomed |= more
            grew = bool(more)
        for pid in doomed:
            try:
                os.kill(pid, 9)
            except OSError:
                pass

    def stop(self) -> None:
        """Stop sshd and unmount the board's /proc."""
        self.sshd.terminate()
        try:
            self.sshd.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.sshd.kill()
        if self.mounted_proc:  # another board on the same root may still use it otherwise
            subprocess.run(["umount", "-l", str(self.root / "proc")], capture_output=True)


def start(root: Path, home: Path, chroot: bool = True, limit_as: int | None = None) -> Board:
    """sshd on a free 127.0.0.1 port chrooting root logins into ``root``; keys and configs in ``home``.
    ``chroot=False``: the same sshd without the chroot (the host itself as a device). ``limit_as``: every process
    of the board (sshd and what it starts) limited to that many bytes of address space (RLIMIT_AS): a board with
    less memory."""
    if chroot:
        _require_chroot_path(root)
    enable_binfmt()
    if chroot:  # a board boots with an empty /tmp: what an earlier, interrupted run left there is not this run's
        for left in (root / "tmp").glob("edgetool-device-*"):
            shutil.rmtree(left, ignore_errors=True)
    mounted = chroot and not os.path.ismount(root / "proc")
    if mounted:
        _run(["mount", "-t", "proc", "proc", str(root / "proc")])
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    for name in ("host_key", "id_ed25519"):
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(home / name)])
    (home / "authorized_keys").write_text((home / "id_ed25519.pub").read_text())
    port = _free_port()
    (home / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {home / 'host_key'}\nPidFile {home / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {home / 'authorized_keys'}\nPubkeyAuthentication yes\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nAllowUsers root\nUsePAM no\n"
        "StrictModes no\nMaxSessions 50\nMaxStartups 50\n" + (f"ChrootDirectory {root}\n" if chroot else "")
    )
    host_pub = (home / "host_key.pub").read_text().split()
    (home / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    (home / "ssh_config").write_text(
        f"Host 127.0.0.1\n  IdentityFile {home / 'id_ed25519'}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {home / 'known_hosts'}\n  GlobalKnownHostsFile /dev/null\n"
        "  StrictHostKeyChecking yes\n  IdentityAgent none\n"
    )

    def limit() -> None:
        if limit_as:
            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))

    sshd = subprocess.Popen(
        ["/usr/sbin/sshd", "-D", "-e", "-f", str(home / "sshd_config")],
        preexec_fn=limit,
        stdout=subprocess.DEVNULL,
        stderr=open(home / "sshd.log", "wb"),
    )
    board = Board(root, home, port, sshd, mounted)
    deadline, said = time.monotonic() + 60, b""
    while time.monotonic() < deadline:
        probe = board.ssh("true", timeout=60)
        if probe.returncode == 0:
            return board
        said = probe.stderr
        if sshd.poll() is not None:
            break
        time.sleep(0.5)
    board.stop()
    raise RuntimeError(
        f"the board's sshd did not come up; ssh said {said.decode(errors='replace').strip()[-500:]!r}; "
        f"sshd's log: {(home / 'sshd.log').read_text()[-1500:]}"
    )


def _require_chroot_path(root: Path) -> None:
    """sshd's ChrootDirectory refuses a path with a component not owned by root or writable by others (a board
    cached under /tmp, say); say so before starting it rather than as a failed login."""
    for part in [root, *root.parents]:
        st = part.stat()
        if st.st_uid != 0 or st.st_mode & 0o022:
            raise RuntimeError(
                f"the board at {root} cannot be sshd's ChrootDirectory: {part} is "
                f"{'not owned by root' if st.st_uid else 'writable by group or others'}, which sshd refuses. Set "
                "EDGETOOL_BOARD_CACHE to a directory whose every component is root-owned and not group/world-writable "
                "(the default ~/.cache/edgetool of root is)."
            )
