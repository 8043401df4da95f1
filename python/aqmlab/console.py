"""The terminal consoles every command prints through (rich), below the CLI
and the library code that prints (bench, reproduce, validation), so none of
them imports the CLI."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["consoles"]


def consoles() -> tuple[Console, Console]:
    """(stdout, stderr) consoles. Not a terminal: tables at 120 columns, but
    text lines are never hard-wrapped (a wrapped line would split a command
    meant to be copied); a reader that closes the pipe raises
    BrokenPipeError, which the CLI turns into exit 0."""
    from rich.console import Console

    class PipeAwareConsole(Console):
        def on_broken_pipe(self) -> None:
            # rich's default exits with status 1; a reader that stops early
            # (`| head`) is not an error.
            self.quiet = True
            raise BrokenPipeError("stdout closed by the reader")

    out = PipeAwareConsole(width=None if sys.stdout.isatty() else 120, soft_wrap=not sys.stdout.isatty(),
                           highlight=False)  # fmt: skip
    err = PipeAwareConsole(stderr=True, width=None if sys.stderr.isatty() else 120,
                           soft_wrap=not sys.stderr.isatty(), highlight=False)  # fmt: skip
    return out, err
