"""Wait a bounded time for the other tasks of a TF_CONFIG cluster before TensorFlow does (it would wait forever).

``MultiWorkerMirroredStrategy`` blocks until every task of the cluster answers, printing gRPC's native retry
lines, with no deadline. ``wait_for_peers`` runs first: this task answers on its own port (a plain listener,
closed again before TensorFlow binds the port), and every other task's ``host:port`` is tried until it accepts a
connection or ``--peer-timeout`` seconds pass; then one UsageError names each task that never answered (exit 2).
Peers running edgetool do the same, so tasks started in any order find each other; a peer that is a plain
TensorFlow worker answers once its own server is up.
"""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager

from edge_tool.core.visible import LONG_TEXT, cap
from edge_tool.errors import UsageError

RETRY_SECONDS = 0.25
LINGER_SECONDS = 1.0  # keep answering this long after every peer answered, so peers still polling see this task
TASK_TYPES = ("chief", "worker")


def _split(address: object) -> tuple[str, int]:
    """("host", port) of a TF_CONFIG address "host:port" / "[v6]:port"; UsageError when it is not one."""
    host, _, port = str(address).rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"TF_CONFIG lists the address {str(address)[:200]!r}; expected host:port.")
    return host, int(port)


def _tasks(cluster: dict) -> list[tuple[str, int, str]]:
    """(task type, index, address) of every chief/worker task of ``cluster``."""
    found = []
    for kind in TASK_TYPES:
        entries = cluster.get(kind, [])
        if not isinstance(entries, list):
            raise UsageError(f"TF_CONFIG cluster {kind!r} must be a list of host:port addresses.")
        found += [(kind, i, str(address)) for i, address in enumerate(entries)]
    return found


@contextmanager
def _answering(port: int):
    """Accept (and drop) connections on ``port`` while the block runs, so peers see this task as up."""
    try:
        server = socket.create_server(("", port), family=socket.AF_INET6, dualstack_ipv6=True)
    except (OSError, ValueError):
        try:
            server = socket.create_server(("", port))
        except OSError as exc:
            raise UsageError(
                f"This task's TF_CONFIG port {port} cannot be listened on ({exc.strerror or exc}); "
                "another process holds it, or it is not this machine's address."
            ) from None
    server.settimeout(RETRY_SECONDS)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.close()
            except OSError:
                continue

    thread = threading.Thread(target=serve, name="edgetool-peer-answer", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        server.close()


def _answers(host: str, port: int, timeout: float) -> str | None:
    """None when ``host:port`` accepts a TCP connection, else why not."""
    try:
        with socket.create_connection((host, port), timeout=max(timeout, 0.05)):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def wait_for_peers(info: dict, timeout: float) -> None:
    """Return once every other chief/worker task of ``info["cluster"]`` answers; UsageError naming the silent ones
    after ``timeout`` seconds."""
    tasks = _tasks(info["cluster"])
    me = next(t for t in tasks if t[0] == info["task_type"] and t[1] == info["task_index"])
    waiting = {t: "no answer yet" for t in tasks if t != me}
    deadline = time.monotonic() + timeout
    with _answering(_split(me[2])[1]):
        while waiting:
            for task in list(waiting):
                why = _answers(*_split(task[2]), min(2.0, deadline - time.monotonic()))
                if why is None:
                    del waiting[task]
                else:
                    waiting[task] = why
            if not waiting:
                time.sleep(LINGER_SECONDS)
                break
            if time.monotonic() >= deadline:
                break
            time.sleep(RETRY_SECONDS)
    if waiting:
        silent = "; ".join(f"{kind} {index} at {address} ({why})" for (kind, index, address), why in waiting.items())
        raise UsageError(
            f"The TF_CONFIG cluster is incomplete: {cap(silent, LONG_TEXT // 2)} ({len(waiting):,} task(s)) did "
            f"not answer within {timeout:g} s. Start "
            "every task of the cluster (each runs edgetool train with the same TF_CONFIG cluster), "
            "check the addresses and firewalls, or wait longer with --peer-timeout SECONDS."
        )
