"""run.py's output when its reader is gone.

An agent runs `run.py` and reads its output, often through a pipe. When the agent is stopped (`autorl loop`
ends its process group on a limit or a STOP; a user kills it), the trial gets SIGTERM and records an
`interrupted` row, but the pipe it prints into has no reader any more: every later print would raise
BrokenPipeError, in the middle of stopping, and the row would be lost. `survive_lost_reader()` makes the
process's stdout and stderr drop what they cannot deliver instead, so the trial ends as it would have.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO


class Surviving:
    """A text stream that stops writing, silently, once its reader is gone (the first BrokenPipeError)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self.broken = True
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self.broken = True

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ... of the stream itself
        return getattr(self._stream, name)


def survive_lost_reader() -> None:
    """Wrap sys.stdout and sys.stderr (once: run.py's entry calls it)."""
    if not isinstance(sys.stdout, Surviving):
        sys.stdout = Surviving(sys.stdout)
    if not isinstance(sys.stderr, Surviving):
        sys.stderr = Surviving(sys.stderr)
