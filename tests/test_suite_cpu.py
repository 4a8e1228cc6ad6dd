"""The run's CPU is printed beside its wall time (tests/suite_cpu.py)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("suite_cpu_under_test", Path(__file__).with_name("suite_cpu.py"))
cpu = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = cpu  # dataclasses look their module up
_spec.loader.exec_module(cpu)


def test_summary_counts_user_sys_cores_and_steal() -> None:
    a = cpu.Snapshot(wall=100.0, user=10.0, sys=2.0, steal=5.0)
    b = cpu.Snapshot(wall=600.0, user=810.0, sys=202.0, steal=35.0)
    line = cpu.summary(a, b, cores=2)
    assert line.startswith("suite CPU: 1000 s (user 800 s + sys 200 s) in 500 s of wall time, 2.0 of 2 cores busy")
    assert line.endswith("steal 30 s")
    assert "steal" not in cpu.summary(a, cpu.Snapshot(600.0, 810.0, 202.0, None), cores=2)


def test_steal_is_read_from_proc_stat() -> None:
    tick = os.sysconf("SC_CLK_TCK")
    assert cpu._steal_seconds(f"cpu  1 2 3 4 5 6 7 {3 * tick} 0 0\ncpu0 1 2 3 4 5 6 7 8\n") == 3.0
    assert cpu._steal_seconds("intr 1 2 3") is None and cpu._steal_seconds(None) is None


def test_a_snapshot_counts_the_children_it_reaped() -> None:
    before = cpu.snapshot()
    subprocess.run([sys.executable, "-c", "x = 0\nfor i in range(3_000_000): x += i"], check=True)
    after = cpu.snapshot()
    assert (after.user + after.sys) - (before.user + before.sys) > 0.05  # the child's loop, reaped
    assert after.wall > before.wall
