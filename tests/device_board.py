"""Emulated boards for the ``--device`` tests: a Debian userland whose programs run under qemu-user (binfmt_misc),
with a Python, numpy and a TFLite runtime, reached through a real sshd on 127.0.0.1 (generated host and client keys,
key auth only, the session chrooted into the userland). One ``Recipe`` per board:

- ``ARM64``: Debian bookworm arm64 (aarch64), Python 3.11, aarch64 wheels of tflite-runtime 2.14 and numpy 1.26,
  root login, reached as ``ssh://root@127.0.0.1:PORT``.
- ``ARMHF``: Debian bullseye armhf (32-bit armv7l), the distribution's own Python 3.9 and numpy 1.19
  (``python3-numpy``), tflite-runtime 2.11's armv7l wheel for cp39 (the newest built against numpy 1.x's older ABI
  that runs with 1.19), a non-root login (``edgeboard``) reached through an ssh config ``Host`` alias
  (``ssh://armboard``).

Built once per machine and cached (``~/.cache/edgetool/board-<key>``, the key hashing the recipe, the qemu and
debootstrap versions), from Debian's and PyPI's packages only:
1. ``debootstrap --arch=ARCH --foreign --variant=minbase --include=...`` resolves and downloads the packages and
   unpacks the base; instead of the second stage (every maintainer script run under qemu: minutes) the remaining
   downloaded .debs are unpacked with ``dpkg-deb -x`` (Python and numpy need no maintainer script to run; the
   alternatives a postinst would link, libblas/liblapack, are linked by the recipe).
2. ``pip download --platform ... --only-binary=:all:`` fetches the wheels, unzipped into the userland's
   ``/usr/local/lib/pythonX.Y/dist-packages``.
tflite-runtime, not ai-edge-litert: ai-edge-litert 2.3's aarch64 wheel segfaults at ``Interpreter()`` under
qemu-user, and it has no armv7l wheel at all.

Needs root (chroot, binfmt_misc, mount, a host account for the non-root login), qemu-user-static, debootstrap and
openssh-server (.ci/run installs them).
"""

from __future__ import annotations

import hashlib
import os
import pwd
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

MIRROR = os.environ.get("EDGETOOL_BOARD_MIRROR", "http://deb.debian.org/debian")
BINFMT = Path("/proc/sys/fs/binfmt_misc")


@dataclass(frozen=True)
class Recipe:
    """How one board is built and reached."""

    tag: str  # part of the cache key: bump when the recipe changes
    arch: str  # debootstrap --arch
    suite: str
    include: tuple[str, ...]  # debootstrap --include
    machine: str  # what uname -m says on it
    binfmt: str  # Debian's binfmt_misc entry (/usr/lib/binfmt.d/NAME.conf)
    python: str  # X.Y of the suite's python3
    wheels: tuple[str, ...]
    platforms: tuple[str, ...]  # pip download --platform
    links: tuple[tuple[str, str], ...] = ()  # (link, target) a postinst (update-alternatives) would make
    user: str = "root"  # the login; another name is a non-root account (created on the host for sshd)
    alias: str = ""  # an ssh config Host alias to reach it by (ssh://ALIAS), else ssh://user@127.0.0.1:PORT

    @property
    def qemu(self) -> str:
        """The qemu-user binary its programs run under."""
        return f"/usr/bin/{self.binfmt}-static"

    def key(self) -> str:
        """The cache key: this recipe, the qemu and debootstrap versions."""
        if self.tag == "board-v1":  # the first board's key as it always was (caches stay valid)
            what = (self.tag, self.suite, self.wheels, _version("qemu-user-static"), _version("debootstrap"))
        else:
            what = (self, _version("qemu-user-static"), _version("debootstrap"))
        return hashlib.sha256(repr(what).encode()).hexdigest()[:12]


ARM64 = Recipe(
    tag="board-v1",
    arch="arm64",
    suite="bookworm",
    include=("python3",),
    machine="aarch64",
    binfmt="qemu-aarch64",
    python="3.11",
    wheels=("tflite-runtime==2.14.0", "numpy==1.26.4"),
    platforms=("manylinux_2_34_aarch64", "manylinux2014_aarch64"),
)
_GNU = "usr/lib/arm-linux-gnueabihf"
ARMHF = Recipe(
    tag="armhf-v1",
    arch="armhf",
    suite="bullseye",
    include=("python3", "python3-numpy"),
    machine="armv7l",
    binfmt="qemu-arm",
    python="3.9",
    wheels=("tflite-runtime==2.11.0",),
    platforms=("manylinux2014_armv7l", "linux_armv7l"),
    links=((f"{_GNU}/libblas.so.3", "blas/libblas.so.3"), (f"{_GNU}/liblapack.so.3", "lapack/liblapack.so.3")),
    user="edgeboard",
    alias="armboard",
)
SUITE, WHEELS = ARM64.suite, ARM64.wheels  # the first board's, as before
TOOLS = {ARM64.qemu: "qemu-user-static", "/usr/sbin/debootstrap": "debootstrap", "/usr/sbin/sshd": "openssh-server"}


def missing(recipe: Recipe = ARM64) -> str | None:
    """Why ``recipe``'s board cannot be built here, or None."""
    if os.geteuid() != 0:
        return "the emulated board needs root (chroot, binfmt_misc)"
    tools = {**TOOLS, recipe.qemu: "qemu-user-static"}
    absent = sorted({pkg for tool, pkg in tools.items() if not Path(tool).exists()})
    return f"install {' '.join(absent)} (apt-get install)" if absent else None


def _version(pkg: str) -> str:
    return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True).stdout


def cache_dir(recipe: Recipe = ARM64) -> Path:
    """Where ``recipe``'s board lives (root-owned, no group/world write: sshd's ChrootDirectory insists)."""
    base = Path(os.environ.get("EDGETOOL_BOARD_CACHE", Path.home() / ".cache" / "edgetool"))
    return base / f"board-{recipe.key()}"


def _run(cmd: list, **kw) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}): {proc.stdout[-2000:]}{proc.stderr[-2000:]}")


def build(target: Path, recipe: Recipe = ARM64) -> Path:
    """``recipe``'s root file system at ``target/root`` (built beside and renamed when complete)."""
    if (target / "root" / "usr" / "bin" / "python3").exists():
        return target / "root"
    tmp = target.with_name(target.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    root = tmp / "root"
    tmp.mkdir(parents=True, mode=0o755)
    include = ",".join(recipe.include)
    cmd = ["debootstrap", f"--arch={recipe.arch}", "--foreign", "--variant=minbase", f"--include={include}"]
    _run([*cmd, recipe.suite, str(root), MIRROR], timeout=900)
    archives = root / "var" / "cache" / "apt" / "archives"
    for deb in sorted(archives.glob("*.deb")):
        _run(["dpkg-deb", "-x", str(deb), str(root)])
        deb.unlink()
    for link, target_name in recipe.links:
        (root / link).symlink_to(target_name)
    for name in ("passwd", "group"):
        shutil.copy(root / "usr" / "share" / "base-passwd" / f"{name}.master", root / "etc" / name)
    wheels = tmp / "wheels"
    abi = "cp" + recipe.python.replace(".", "")
    platforms = [arg for plat in recipe.platforms for arg in ("--platform", plat)]
    _run(
        [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", *platforms]
        + ["--python-version", recipe.python, "--implementation", "cp", "--abi", abi, "-d", str(wheels)]
        + (["--no-deps"] if "python3-numpy" in recipe.include else [])  # numpy is the distribution's
        + list(recipe.wheels),
        timeout=600,
    )
    site = root / "usr" / "local" / "lib" / f"python{recipe.python}" / "dist-packages"
    site.mkdir(parents=True, exist_ok=True)
    for whl in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(whl) as z:
            z.extractall(site)
    shutil.rmtree(wheels)
    if target.exists():
        shutil.rmtree(target)
    tmp.rename(target)
    return target / "root"


def enable_binfmt(recipe: Recipe = ARM64) -> None:
    """Register ``recipe``'s qemu with binfmt_misc (Debian's own entry, flag F: works inside a chroot) if needed."""
    if not (BINFMT / "register").exists():
        _run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)])
    entry = BINFMT / recipe.binfmt
    if not entry.exists():
        conf = Path(f"/usr/lib/binfmt.d/{recipe.binfmt}.conf").read_text()
        (BINFMT / "register").write_text("".join(ln for ln in conf.splitlines() if not ln.startswith("#")))
    elif "enabled" not in entry.read_text():
        entry.write_text("1")


def binfmt_problem(recipe: Recipe = ARM64) -> str | None:
    """Why ``recipe``'s programs cannot be run here through binfmt_misc (after trying to enable it), or None."""
    try:
        enable_binfmt(recipe)
    except (OSError, RuntimeError) as exc:
        return f"binfmt_misc cannot run {recipe.machine} programs through qemu here: {exc}"
    return None


def prepare(recipe: Recipe = ARM64) -> Path:
    """The board's root, built or from the cache, its binfmt entry registered; RuntimeError saying why not."""
    why = missing(recipe) or binfmt_problem(recipe)
    if why:
        raise RuntimeError(why)
    return build(cache_dir(recipe), recipe)


def private_root(root: Path, tag: str) -> Path:
    """A copy of a built board's root for one user of it (hard links: a second, no space; /proc and /tmp fresh):
    its runners, temp dirs and "nothing left on the board" checks never meet another test file's, run at the same
    time by another pytest worker on the shared cached board. ``remove_private`` deletes it."""
    base = root.parent.with_name(f"{root.parent.name}-{tag}-{os.getpid()}")
    shutil.rmtree(base, ignore_errors=True)
    (base / "root").mkdir(parents=True, mode=0o755)
    for entry in root.iterdir():
        if entry.name not in ("proc", "tmp"):
            _run(["cp", "-al", str(entry), str(base / "root" / entry.name)])
    for name, mode in (("proc", 0o555), ("tmp", 0o1777)):
        (base / "root" / name).mkdir()
        (base / "root" / name).chmod(mode)
    return base / "root"


def remove_private(root: Path) -> None:
    """Delete a ``private_root`` copy (its /proc unmounted first)."""
    if os.path.ismount(root / "proc"):
        subprocess.run(["umount", "-l", str(root / "proc")], capture_output=True)
    if not os.path.ismount(root / "proc"):
        shutil.rmtree(root.parent, ignore_errors=True)


def _account(recipe: Recipe, root: Path) -> int:
    """The non-root login's uid: a host account (sshd looks the user up before its chroot), the same entry in the
    board's /etc/passwd and a home directory there owned by it."""
    try:
        entry = pwd.getpwnam(recipe.user)
    except KeyError:
        home = f"/home/{recipe.user}"
        _run(["useradd", "--system", "--no-create-home", "--home-dir", home, "--shell", "/bin/bash", recipe.user])
        entry = pwd.getpwnam(recipe.user)
    _run(["usermod", "-p", "*", recipe.user])  # no password, but not locked (sshd refuses a locked account)
    lines = [ln for ln in (root / "etc" / "passwd").read_text().splitlines() if not ln.startswith(recipe.user + ":")]
    lines.append(f"{recipe.user}:x:{entry.pw_uid}:{entry.pw_gid}::{entry.pw_dir}:/bin/bash")
    (root / "etc" / "passwd").write_text("\n".join(lines) + "\n")
    home = root / entry.pw_dir.lstrip("/")
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    return entry.pw_uid


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
    recipe: Recipe = ARM64
    keys: Path | None = None  # a world-readable dir with authorized_keys (a non-root login reads it before chroot)

    @property
    def target(self) -> str:
        """What plain ssh is given: the alias, or user@127.0.0.1 (with -p)."""
        return self.recipe.alias or f"{self.recipe.user}@127.0.0.1"

    @property
    def url(self) -> str:
        """The --device URL."""
        return f"ssh://{self.recipe.alias}" if self.recipe.alias else f"ssh://root@127.0.0.1:{self.port}"

    @property
    def ssh_config(self) -> Path:
        """The client's ssh config (EDGETOOL_SSH_CONFIG / ``ssh -F``)."""
        return self.home / "ssh_config"

    def ssh(self, command: str, stdin: bytes | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        """Run ``command`` on the board with plain ssh (not edgetool's code)."""
        return subprocess.run(
            ["ssh", "-F", str(self.ssh_config), "-p", str(self.port), self.target, command],
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
        if self.keys is not None:
            shutil.rmtree(self.keys, ignore_errors=True)


def start(root: Path, home: Path, chroot: bool = True, limit_as: int | None = None, recipe: Recipe = ARM64) -> Board:
    """sshd on a free 127.0.0.1 port chrooting ``recipe.user``'s logins into ``root``; keys and configs in ``home``.
    ``chroot=False``: the same sshd without the chroot (the host itself as a device). ``limit_as``: every process
    of the board (sshd and what it starts) limited to that many bytes of address space (RLIMIT_AS): a board with
    less memory. A recipe with an ``alias`` is reached through a ``Host`` alias of the client's ssh config."""
    if chroot:
        _require_chroot_path(root)
    enable_binfmt(recipe)
    if chroot:  # a board boots with an empty /tmp: what an earlier, interrupted run left there is not this run's
        for left in (root / "tmp").glob("edgetool-device-*"):
            shutil.rmtree(left, ignore_errors=True)
    mounted = chroot and not os.path.ismount(root / "proc")
    if mounted:
        _run(["mount", "-t", "proc", "proc", str(root / "proc")])
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    for name in ("host_key", "id_ed25519"):
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(home / name)])
    keys = None
    if recipe.user != "root":
        _account(recipe, root)
        keys = Path(tempfile.mkdtemp(prefix="edgetool-board-keys-"))
        keys.chmod(0o755)
    authorized = (keys or home) / "authorized_keys"
    authorized.write_text((home / "id_ed25519.pub").read_text())
    authorized.chmod(0o644)
    port = _free_port()
    login = "PermitRootLogin prohibit-password\n" if recipe.user == "root" else "PermitRootLogin no\n"
    (home / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {home / 'host_key'}\nPidFile {home / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {authorized}\nPubkeyAuthentication yes\nPasswordAuthentication no\n"
        f"KbdInteractiveAuthentication no\n{login}AllowUsers {recipe.user}\nUsePAM no\n"
        "StrictModes no\nMaxSessions 50\nMaxStartups 50\n" + (f"ChrootDirectory {root}\n" if chroot else "")
    )
    host_pub = (home / "host_key.pub").read_text().split()
    (home / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    where = f"Host {recipe.alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {recipe.user}\n" if recipe.alias else ""
    (home / "ssh_config").write_text(
        (where or "Host 127.0.0.1\n") + f"  IdentityFile {home / 'id_ed25519'}\n  IdentitiesOnly yes\n"
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
    board = Board(root, home, port, sshd, mounted, recipe, keys)
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
