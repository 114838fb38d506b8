"""The Typer application: registers every command; its edge turns every way a run ends into one exit code.

Exit codes: 0 success, 1 a budget broken (CI gate), 2 bad input (EdgeToolError), 70 an internal error
(one line; the traceback with ``EDGETOOL_DEBUG=1``), 130/143/129 stopped by SIGINT/SIGTERM/SIGHUP after cleanup.
``edgetool --help`` has to be instant: it imports no command module (``Commands``), and a command's module stays
light at import time (no TensorFlow) for its own ``--help``.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import sys
from collections.abc import Callable

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperCommand, TyperGroup
from typer.exceptions import TyperException
from typer.main import get_command_from_info
from typer.models import CommandInfo

from edge_tool import __version__
from edge_tool.commands import registry
from edge_tool.core import diskfull, scratch, signals, stdio, textsafe
from edge_tool.core.visible import cap
from edge_tool.errors import EdgeToolError

INTERNAL_ERROR_EXIT = 70  # EX_SOFTWARE (sysexits.h)
BROKEN_PIPE_EXIT = 141  # 128 + SIGPIPE, what a shell reports for a writer whose reader went away
DEBUG_ENV = "EDGETOOL_DEBUG"

err_console = Console(stderr=True)


class Commands(TyperGroup):
    """The root command: every command of ``commands.registry``, listed from its docstring alone; a command's module
    is imported, and its options built, only when the command line names it."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.modules = dict(registry.COMMANDS)
        for name, module in registry.COMMANDS:  # placeholders: enough for the list (and typo suggestions)
            self.commands[name] = TyperCommand(name=name, help=registry.summary(module), rich_markup_mode="rich")

    def resolve_command(self, ctx, args):
        """Build the named command (import its module) before Typer resolves it."""
        name = args[0] if args else None
        if name in self.modules and self.commands[name].callback is None:
            info = CommandInfo(name=name, callback=guard_command(registry.load(self.modules[name])))
            self.commands[name] = get_command_from_info(
                info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode
            )
        return super().resolve_command(ctx, args)


app = typer.Typer(
    cls=Commands,
    name="edgetool",
    help="Train with tf.distribute, convert to TFLite/TFJS, measure drift and latency, ship an offline PWA demo.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def debug_enabled() -> bool:
    """True when EDGETOOL_DEBUG asks for tracebacks of internal errors."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _say(kind: str, message: object) -> None:
    """One message on stderr: a bold label, then ``message`` verbatim (never read as markup), capped at
    ``visible.LONG_TEXT`` characters (its beginning and its end); nothing when the reader of stderr has gone."""
    try:
        err_console.print(
            Text.assemble((f"{kind}:", "bold red"), " ", textsafe.text(cap(str(message)))),
            highlight=False,
            soft_wrap=True,
        )
    except BrokenPipeError:
        stdio.silence(sys.stderr)


def _silence_stdout() -> None:
    """Point stdout and stderr at /dev/null so Python's exit-time flush cannot raise BrokenPipeError again."""
    stdio.silence(sys.stdout, sys.stderr)


def _os_error_message(exc: OSError) -> str:
    where = " and ".join(repr(str(f))[:1000] for f in (exc.filename, exc.filename2) if f is not None)
    what = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno in diskfull.FULL:
        room = diskfull.free_space(exc.filename) if exc.filename is not None else ""
        return (
            f"{what}{' while writing ' + where if where else ''}"
            f"{' (' + room + ', after removing the partial output)' if room else ''}. Nothing partial was left "
            "and the inputs are untouched; free space there or write elsewhere, then rerun."
        )
    return (
        f"{what}{': ' + where if where else ''}. The file system refused the operation; check that path "
        "(its length, permissions, free space), then rerun."
    )


def _internal_error(exc: Exception) -> typer.Exit:
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    message = (
        f" {__version__} ({type(exc).__name__}{': ' + first if first else ''}); rerun with {DEBUG_ENV}=1 "
        "for the traceback, and please report it."
    )
    try:
        err_console.print(
            Text.assemble(("internal error in edgetool", "bold red"), textsafe.text(message)),
            highlight=False,
            soft_wrap=True,
        )
    except BrokenPipeError:
        stdio.silence(sys.stderr)
    return typer.Exit(INTERNAL_ERROR_EXIT)


def guard_command(func: Callable) -> Callable:
    """Wrap a command: errors become one clear line and their exit code; signals stop it after cleanup."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with signals.stop_like_interrupt(), scratch.run_tempdir():  # temp files of this run, swept if killed
            try:
                return func(*args, **kwargs)
            except EdgeToolError as exc:
                _say(getattr(exc, "heading", None) or ("budget exceeded" if exc.exit_code == 1 else "error"), exc)
                raise typer.Exit(exc.exit_code) from None
            except KeyboardInterrupt as exc:  # SIGINT, or SIGTERM/SIGHUP via signals.Terminated
                _say(
                    "stopped",
                    f"{signals.signal_name(exc)} received; cleaned up (no partial output, no "
                    "temporary files, no child processes left).",
                )
                raise typer.Exit(signals.exit_code(exc)) from None
            except (typer.Exit, typer.Abort, TyperException):  # Typer's own flow (--help, bad options)
                raise
            except BrokenPipeError:  # `edgetool inspect M --json | head`: the reader left; say nothing more
                _silence_stdout()
                raise typer.Exit(BROKEN_PIPE_EXIT) from None
            except OSError as exc:  # the file system said no: a name too long, a full disk, no permission, ...
                _say("error", _os_error_message(exc))
                raise typer.Exit(2) from None
            except Exception as exc:
                if debug_enabled():
                    raise
                raise _internal_error(exc) from None

    return wrapper


def _version(value: bool) -> None:
    if value:
        typer.echo(f"edgetool {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """edgetool: from a tf.distribute-trained model to TFLite, TFJS and a browser demo."""


def main() -> None:
    """Console-script entry point; ends the process with ``_end`` (fast once TensorFlow is loaded)."""
    stdio.reopen_closed()  # `edgetool … >&-`: descriptors 0-2 are /dev/null before any file is opened
    stdio.raise_broken_pipe()  # rich would exit 1 on a closed pipe; BrokenPipeError reaches guard_command (141)
    try:
        app()
    except SystemExit as exc:
        _end(BROKEN_PIPE_EXIT if stdio.click_saw_broken_pipe() else exc.code)
    _end(0)


FULL_EXIT_ENV = "EDGETOOL_FULL_EXIT"


def _end(code: object) -> None:
    """Exit with ``code``; once TensorFlow is loaded, without the interpreter's teardown.

    TensorFlow's teardown (finalising its module graph, C++ static destructors, thread pools) takes seconds and
    does nothing edgetool needs: every file it wrote is closed and renamed, every child process ended, every
    temporary directory removed before a command returns. So atexit handlers run, stdout and stderr are
    flushed, and the process ends with os._exit. ``EDGETOOL_FULL_EXIT=1`` keeps the normal exit.
    """
    if "tensorflow" not in sys.modules or os.environ.get(FULL_EXIT_ENV, "").strip() not in ("", "0"):
        raise SystemExit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # SystemExit("message"): printed on stderr, status 1, as Python does
        print(code, file=sys.stderr)
        status = 1

    atexit._run_exitfuncs()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a closed or broken pipe (or no stream): nothing more to say
            pass
    os._exit(status & 0xFF)  # as the shell would see sys.exit(status)
