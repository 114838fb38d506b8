"""``ssh://[user@]host[:port][?python=PATH]``: the one form ``--device`` accepts, parsed strictly.

Every part is checked against a narrow alphabet before it reaches the ``ssh`` command line (as separate argv
items, after ``--``), so no URL can become an ssh option or a remote shell word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from edge_tool.errors import UsageError

_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]")
_PYTHON = re.compile(r"[A-Za-z0-9_./+-]{1,255}")
FORM = "ssh://[user@]host[:port][?python=PATH]"


@dataclass(frozen=True)
class DeviceURL:
    """A device reached over SSH: user (None: ssh's own choice), host, port (None: ssh's), Python to run."""

    url: str
    host: str
    user: str | None = None
    port: int | None = None
    python: str = "python3"

    @classmethod
    def parse(cls, url: str | DeviceURL) -> DeviceURL:
        """The URL's parts, or UsageError (exit 2) naming the expected form and what was wrong (a DeviceURL,
        parsed already, is itself)."""
        if isinstance(url, DeviceURL):
            return url

        def refuse(why: str) -> UsageError:
            return UsageError(
                f"--device expects {FORM} (e.g. ssh://pi@raspberrypi.local or "
                f"ssh://user@10.0.0.7:2222?python=/usr/bin/python3.11), but {redact(url)!r} {why}."
            )

        if not isinstance(url, str) or not url.startswith("ssh://"):
            raise refuse("does not start with ssh://")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise refuse(f"is not a valid URL ({exc})") from None
        if parts.password is not None:
            raise refuse("carries a password (use an SSH key or agent; edgetool never sends passwords)")
        if parts.path not in ("", "/") or parts.fragment:
            raise refuse("has a path or fragment")
        netloc = parts.netloc.rpartition("@")[2]
        host = netloc[: netloc.find("]") + 1] if netloc.startswith("[") else netloc.partition(":")[0]
        if not _HOST.fullmatch(host or ""):
            raise refuse(f"has no valid host name ({host!r})")
        user = parts.username
        if user is not None and not _USER.fullmatch(user):
            raise refuse(f"has an invalid user name ({user!r})")
        if port is not None and not 0 < port < 65536:
            raise refuse("has a port outside 1..65535")
        query = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=False) if parts.query else []
        python = "python3"
        for key, value in query:
            if key != "python":
                raise refuse(f"has the query parameter {key!r} (only python=PATH is understood)")
            if not _PYTHON.fullmatch(value) or value.startswith("-"):
                raise refuse(f"names the Python {value!r} (letters, digits and . _ / + - only)")
            python = value
        if len(query) > 1:
            raise refuse("names python= more than once")
        return cls(url, host.strip("[]"), user, port, python)

    @property
    def name(self) -> str:
        """Short display name: user@host:port as given, and ?python=PATH when it names one (two Pythons of one
        host are two devices with two names)."""
        where = (f"{self.user}@" if self.user else "") + self.host + (f":{self.port}" if self.port else "")
        return where + (f"?python={self.python}" if self.python != "python3" else "")


def redact(url: object) -> str:
    """``url`` with any password in its user part shown as ``***`` (never echoed back, whatever else is wrong)."""
    text = str(url)
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    end = min([i for i in (rest.find(c) for c in "/?#") if i >= 0] or [len(rest)])
    netloc = rest[:end]
    userinfo, at, hostport = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = userinfo.partition(":")[0] + ":***@" + hostport
    return (scheme + sep if sep else "") + netloc + rest[end:]
