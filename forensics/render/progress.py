"""A progress bar on stderr for long work: only at a terminal, never in a pipe or with --json.

Library functions that stream take `progress=` (a callable `progress(done, total)`) and never print;
`progress_for` gives the CLI such a callable backed by a transient rich bar, or None when no bar is wanted.
"""

from __future__ import annotations

import contextlib
import time

MIN_BYTES = 64 << 20  # below this the work takes well under a second: no bar
DELAY = 1.0           # and the bar appears only once the work has run this long


def wants_progress(stream, *, json: bool = False, total: int | None = None, min_total: int = MIN_BYTES) -> bool:
    if json or stream is None or not (hasattr(stream, "isatty") and stream.isatty()):
        return False
    return total is None or total >= min_total


@contextlib.contextmanager
def progress_for(out, args, description: str, total: int | None = None, *, min_total: int = MIN_BYTES,
                 unit: str = "bytes"):
    """Yield `progress(done, total)` drawing a bar on out.stderr, or None (no terminal, --json, small work).
    `unit` "bytes" shows sizes, anything else counts (e.g. pairs)."""
    if not wants_progress(out.stderr, json=getattr(args, "json", False), total=total, min_total=min_total):
        yield None
        return
    from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeRemainingColumn)

    from forensics.render.console import make_console, safe_console_options

    console = make_console(out.stderr, **safe_console_options(out.stderr))
    amount = DownloadColumn() if unit == "bytes" else MofNCompleteColumn()
    bar = Progress(TextColumn("{task.description}"), BarColumn(), amount, TimeRemainingColumn(),
                   console=console, transient=True)
    state = {"task": None, "start": time.monotonic()}

    def progress(done: int, whole: int | None = None) -> None:
        if state["task"] is None:
            if time.monotonic() - state["start"] < DELAY:
                return
            bar.start()
            state["task"] = bar.add_task(description, total=whole or total)
        bar.update(state["task"], completed=done, total=whole or total)

    try:
        yield progress
    finally:
        if state["task"] is not None:
            bar.stop()
