"""The CLI's progress lines: each message on stderr with the seconds since the command
began."""

from __future__ import annotations

import sys
import time
from typing import Callable


def progress_printer(started: float) -> Callable[[str], None]:
    """A progress callback for the CLI: each message on stderr with the seconds since
    `started`."""
    def say(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", file=sys.stderr, flush=True)
    return say
