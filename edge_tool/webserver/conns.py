"""Non-blocking looks at one accepted connection, and cutting it, for ``webserver.server``."""

from __future__ import annotations

import select
import socket


def client_state(conn: socket.socket) -> str:
    """What the client did, without blocking: "idle" (nothing to read), "request" (bytes wait) or "closed".

    ``select.poll`` needs no file descriptor of its own, so this works while the process is out of them.
    """
    poller = select.poll()
    poller.register(conn, select.POLLIN)
    if not poller.poll(0):
        return "idle"
    try:
        return "request" if conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) else "closed"
    except BlockingIOError:
        return "idle"
    except OSError:
        return "closed"


def cut(conn: socket.socket) -> None:
    """Shut ``conn`` down both ways (the worker blocked on it wakes and closes it); never raises."""
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def first_evictable(waiting) -> socket.socket | None:
    """Of the connections ``waiting`` (oldest first), the first one its client closed, else the first idle one;
    never one whose request bytes wait. None when none qualifies."""
    chosen = None
    for conn in waiting:
        state = client_state(conn)
        if state == "closed":
            return conn
        if state == "idle" and chosen is None:
            chosen = conn
    return chosen
