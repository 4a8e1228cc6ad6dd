"""Progress for long-running commands, in a terminal and in logs, with a heartbeat.

A live bar redrawn in place is right in a terminal and useless in a CI log or a ``nohup`` file,
where rich prints nothing until the end. :class:`StepProgress` picks the form from the console:

* a terminal: a rich bar (count, best value, elapsed time);
* anything else: one plain line per finished step **on stderr**, so logs show the run moving
  and stdout keeps only the command's results.

Either way a heartbeat thread prints ``still running <what>, 30 s`` when a step takes long (a
hanging candidate that will only be killed at its timeout), then again every ``heartbeat_s``.
:func:`interrupted` is the one message a command prints on Ctrl-C: what was kept and the exact
command that resumes it.
"""

from __future__ import annotations

import contextlib
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any, TextIO

#: Seconds a step may run before the first "still running" line (and between further ones);
#: ``VERIFORGE_HEARTBEAT_S`` overrides it (a CI job that wants denser signs of life, or a test).
HEARTBEAT_S = 30.0

#: Exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED_EXIT = 130


def default_heartbeat_s() -> float:
    """:data:`HEARTBEAT_S`, or ``$VERIFORGE_HEARTBEAT_S`` when set to a number (0 turns it off)."""
    import os

    try:
        return float(os.environ.get("VERIFORGE_HEARTBEAT_S", HEARTBEAT_S))
    except ValueError:
        return HEARTBEAT_S


def _fmt_elapsed(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds} s" if seconds < 120 else f"{seconds // 60} min {seconds % 60:02d} s"


class StepProgress:
    """Progress of ``total`` steps (``None``: unknown) labelled ``label``.

    ``started(key, what)`` marks work in flight (the heartbeat names the oldest one);
    ``step(completed, note)`` reports a finished step (and ends the work ``key`` if given).
    ``quiet`` shows nothing but the heartbeat: a silent hang is never what a user wants.
    ``stream`` receives the plain lines (default: stderr); ``live`` forces the form (default: a rich
    bar exactly when ``console`` is a terminal).
    """

    def __init__(self, label: str, total: int | None, *, console: Any | None = None, quiet: bool = False,
                 stream: TextIO | None = None, heartbeat_s: float | None = None, live: bool | None = None,
                 prefix: str = "") -> None:
        from rich.console import Console

        self.label = label
        self.total = total or None
        self.console = console if console is not None else Console(stderr=True)
        self.quiet = quiet
        self.stream = stream
        self.heartbeat_s = heartbeat_s if heartbeat_s is not None else default_heartbeat_s()
        self.live = (bool(self.console.is_terminal) if live is None else live) and not quiet
        self.prefix = prefix or label
        self.completed = 0
        self._t0 = time.monotonic()
        self._last_event = self._t0
        self._in_flight: dict[Any, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None
        self._task: Any = None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> StepProgress:
        if self.live:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                                 TextColumn("{task.completed}/{task.total}"), TextColumn("{task.fields[note]}"),
                                 TimeElapsedColumn(), console=self.console, transient=False)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=self.total, note="")
        elif not self.quiet:
            self._line(f"{self.prefix}: started" + (f" ({self.total} steps)" if self.total else ""))
        if self.heartbeat_s > 0:
            self._thread = threading.Thread(target=self._beat, name="veriforge-heartbeat", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stop the heartbeat and the live bar (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None

    # --------------------------------------------------------------------- events

    def started(self, key: Any, what: str) -> None:
        """Work ``key`` (described as ``what``, e.g. "candidate 3f2a… (unroll x4)") has begun."""
        with self._lock:
            self._in_flight[key] = (what, time.monotonic())

    def finished(self, key: Any) -> None:
        """Work ``key`` ended (without counting a step)."""
        with self._lock:
            self._in_flight.pop(key, None)
            self._last_event = time.monotonic()

    def step(self, completed: int | None = None, note: str = "", *, key: Any = None) -> None:
        """A step finished: ``completed`` steps so far (default: one more), ``note`` (best value...)."""
        with self._lock:
            if key is not None:
                self._in_flight.pop(key, None)
            self.completed = self.completed + 1 if completed is None else completed
            self._last_event = time.monotonic()
            done = self.completed if self.total is None else min(self.completed, self.total)
        if self._bar is not None:
            self._bar.update(self._task, completed=done, note=note)
        elif not self.quiet:
            count = f"{done}/{self.total}" if self.total else str(done)
            self._line(f"{self.prefix}: {count}" + (f" · {note}" if note else "")
                       + f" · {_fmt_elapsed(time.monotonic() - self._t0)}")

    def note(self, text: str) -> None:
        """One line outside the step count (e.g. a warning), in the current form."""
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
        else:
            self._line(text)

    # ------------------------------------------------------------------ internals

    def _line(self, text: str) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        print(text, file=stream, flush=True)

    def _oldest(self, now: float) -> tuple[str, float, int]:
        """(what, seconds without news, how many others are in flight) of the oldest work.

        "Without news": since that work began or the last step finished, whichever is later — work
        queued behind a busy pool is not slow while other steps keep finishing.
        """
        with self._lock:
            if self._in_flight:
                key = min(self._in_flight, key=lambda k: self._in_flight[k][1])
                what, since = self._in_flight[key]
                return what, now - max(since, self._last_event), len(self._in_flight) - 1
            return f"{self.label} (step {self.completed + 1})", now - self._last_event, 0

    def heartbeat_line(self, now: float | None = None) -> str | None:
        """The "still running" line due at ``now`` (``None`` when nothing has run that long)."""
        what, waited, others = self._oldest(time.monotonic() if now is None else now)
        if waited < self.heartbeat_s:
            return None
        more = f" (and {others} more)" if others else ""
        return f"{self.prefix}: still running {what}{more}, {_fmt_elapsed(waited)}"

    def _beat(self) -> None:
        """Every second: print the heartbeat line once per ``heartbeat_s`` of the same wait."""
        shown = 0  # heartbeats already printed for the current wait
        while not self._stop.wait(1.0):
            _, waited, _ = self._oldest(time.monotonic())
            due = int(waited // self.heartbeat_s)
            if due < shown or due == 0:
                shown = 0 if due == 0 else due - 1  # a new wait began
            if due > shown:
                line = self.heartbeat_line()
                if line is not None and not STOPPING.is_set():  # after Ctrl-C "still running" misleads
                    self.note(line)
                shown = due


def new_run_id() -> str:
    """A fresh run id in the run store's format, made by the command before its run starts so
    that an interrupt at any moment can print the id that resumes it."""
    import uuid

    return f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"


def resume_command(argv: Sequence[str], run_id: str, option: str = "--run-id") -> str:
    """The command line that resumes a run: the same arguments with ``OPTION RUN_ID`` (replaced if
    present), so the settings the store checks on resume are the same."""
    args = list(argv)
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == option:
            i += 2
            continue
        if not a.startswith(f"{option}="):
            out.append(a)
        i += 1
    return " ".join(shlex.quote(a) for a in ["veriforge", *out, option, run_id])


def interrupted(run_id: str | None, argv: Sequence[str] | None = None, *, kept: str = "",
                option: str = "--run-id") -> str:
    """The one line printed on Ctrl-C: what was kept and how to resume (``option`` names the run)."""
    args = list(sys.argv[1:] if argv is None else argv)
    text = "interrupted"
    if kept:
        text += f" ({kept})"
    if run_id:
        text += f"; resume with: {resume_command(args, run_id, option)}"
    return text


#: Seconds the work may take to stop after Ctrl-C before the process exits anyway.
INTERRUPT_GRACE_S = 10.0

#: Set from the first Ctrl-C until :func:`interrupt_hint` ends: the work is stopping, so heartbeats
#: ("still running ...") are not printed during the grace period.
STOPPING = threading.Event()


def _exit_now() -> None:
    """Leave at once with 130: flush what was printed, skip waiting for worker threads."""
    import os

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(INTERRUPTED_EXIT)


@contextlib.contextmanager
def interrupt_hint(message: Callable[[], str], grace_s: float | None = None) -> Iterator[list[bool]]:
    """While active, the first Ctrl-C prints ``message()`` on stderr *at once* and interrupts.

    Why not just catch ``KeyboardInterrupt``: an evaluation blocked in a sandboxed program runs in a
    worker thread that asyncio waits for before the interrupt reaches the command, so the hint
    would come only when that program hits its time limit (minutes). Here the hint is printed from
    the signal handler; the interrupt then unwinds normally (the run is marked resumable), and if
    the work has not stopped ``grace_s`` seconds later — or on a second Ctrl-C — the process exits
    130 without waiting (the sandbox enforces its own deadline, so nothing outlives it). Yields a
    list that is non-empty once the hint was printed. Outside the main thread it does nothing.
    """
    printed: list[bool] = []
    if threading.current_thread() is not threading.main_thread():
        yield printed
        return
    grace = INTERRUPT_GRACE_S if grace_s is None else grace_s

    def handler(signum: int, frame: Any) -> None:
        if printed:
            _exit_now()  # a second Ctrl-C: quit now
        printed.append(True)
        STOPPING.set()
        with contextlib.suppress(Exception):
            print(message(), file=sys.stderr, flush=True)
            print(f"stopping: running work gets up to {grace:g} s (Ctrl-C again quits now)", file=sys.stderr,
                  flush=True)
        timer = threading.Timer(grace, _exit_now)
        timer.daemon = True
        timer.start()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield printed
    finally:
        signal.signal(signal.SIGINT, previous)
        STOPPING.clear()


def run_interruptible(hint: Callable[[], str], work: Callable[[], Any], fail: Callable[[str], Any]) -> Any:
    """``work()`` under :func:`interrupt_hint`: a :class:`VeriforgeError` goes to ``fail`` as one
    line; Ctrl-C prints ``hint()`` once (from the handler, or here if the handler was not active)
    and exits 130. What every resumable command does around its work."""
    import typer

    from veriforge.errors import VeriforgeError

    with interrupt_hint(hint) as hinted:
        try:
            return work()
        except VeriforgeError as exc:
            return fail(str(exc))
        except KeyboardInterrupt:
            if not hinted:
                typer.echo(hint(), err=True)
            raise typer.Exit(INTERRUPTED_EXIT) from None

