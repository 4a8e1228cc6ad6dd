"""The CPU the whole test run used, printed beside its wall time at the end of the run.

Why: on a VM the same suite took 446 s one evening and 694-706 s the same afternoon, and the CPU
time of the very same work differed by ~37% (the host's cores were contended). A wall time alone
cannot say whether the suite got slower or the machine did; wall and CPU together can. Counted as
the session process's own CPU plus, per xdist worker, what the worker reports at its end: its own
CPU and that of every child it reaped (compilers, sandboxed programs, CLI processes, servers). The
controller cannot count the workers itself: it does not always reap them before the summary.
Without xdist, the session process's reaped children count directly. ``/proc/stat`` adds the steal
time the hypervisor reported, where it reports any.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Snapshot:
    wall: float
    user: float
    sys: float
    steal: float | None  # seconds, whole machine; None where /proc/stat says nothing


def _steal_seconds(stat_text: str | None) -> float | None:
    if not stat_text:
        return None
    fields = stat_text.splitlines()[0].split()
    if fields[0] != "cpu" or len(fields) < 9:
        return None
    return int(fields[8]) / os.sysconf("SC_CLK_TCK")


def process_cpu(children: bool = True) -> tuple[float, float]:
    """(user, sys) seconds of this process, and of the children it reaped unless ``children`` is False."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    if not children:
        return me.ru_utime, me.ru_stime
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + kids.ru_utime, me.ru_stime + kids.ru_stime


def snapshot(workers: list[tuple[float, float]] | None = None) -> Snapshot:
    """Now. ``workers``: the (user, sys) each xdist worker reported; then the session process counts
    only its own CPU (its reaped children would be those workers again)."""
    user, sys_ = process_cpu(children=not workers)
    for u, s in workers or ():
        user, sys_ = user + u, sys_ + s
    try:
        with open("/proc/stat") as fh:
            stat = fh.read()
    except OSError:
        stat = None
    return Snapshot(time.monotonic(), user, sys_, _steal_seconds(stat))


def summary(start: Snapshot, end: Snapshot, cores: int) -> str:
    """One line: wall, CPU (user + sys), cores busy on average, and steal where it was counted."""
    wall = max(end.wall - start.wall, 1e-9)
    user, sys_ = end.user - start.user, end.sys - start.sys
    line = (f"suite CPU: {user + sys_:.0f} s (user {user:.0f} s + sys {sys_:.0f} s) in {wall:.0f} s of wall time, "
            f"{(user + sys_) / wall:.1f} of {cores} cores busy on average")
    if start.steal is not None and end.steal is not None:
        line += f"; steal {end.steal - start.steal:.0f} s"
    return line
