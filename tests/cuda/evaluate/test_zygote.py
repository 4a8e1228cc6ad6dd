"""PyTorch→CUDA evaluations run in children forked from one fork server (the zygote) that imported torch
once: still one process per evaluation, still killed on timeout, and a crash (even of the server
itself) costs one result, never the harness.

The crash/hang candidates below would be refused by the static anti-cheat scan (they import ``os``), so
these tests switch the scan off: they model a candidate that slipped past it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from veriforge.cuda.evaluate import anticheat_torch
from veriforge.cuda.evaluate.harness import evaluate
from veriforge.cuda.evaluate.isolation import uses_zygote
from veriforge.cuda.evaluate.zygote import get_zygote

RELU = Path(__file__).parents[1] / "tasks" / "data" / "torch2cuda" / "relu_rows"
IMPLS = sorted((RELU / "impls").glob("*.py"))

_HEAD = '''
import os
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim_in):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim_in))

    def forward(self, x):
'''
CRASH = _HEAD + "        os.kill(os.getpid(), 11)\n"
HANG = _HEAD + "        while True:\n            pass\n"
KILLS_SERVER = _HEAD + "        os.kill(os.getppid(), 9)\n        while True:\n            pass\n"
ENV_PROBE = "import os\nraise RuntimeError('probe=' + os.environ.get('VF_ZYGOTE_PROBE', 'unset'))\n"

pytestmark = pytest.mark.skipif(not uses_zygote("cpu"), reason="no fork server on this platform")


@pytest.fixture
def no_static_scan(monkeypatch):
    monkeypatch.setattr(anticheat_torch, "scan_torch", lambda *a, **k: [])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _uid_alive(uid: int) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as fh:
                    fields = dict(line.split(":", 1) for line in fh.read().splitlines() if ":" in line)
            except OSError:
                continue
            if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
                return True
    return False


def _passes() -> bool:
    res = evaluate(RELU, IMPLS[0], configs=["small"])
    return res.verdict.correct


def test_crash_and_hang_cost_one_child_not_the_server(no_static_scan, monkeypatch, tmp_path: Path) -> None:
    assert _passes()
    zygote = get_zygote()
    server = zygote.server_pid
    assert server is not None and _alive(server)

    res = evaluate(RELU, CRASH, configs=["small"])
    assert not res.verdict.correct and res.details["status"] == "crash"
    assert "signal 11" in res.verdict.reason

    started = time.monotonic()
    res = evaluate(RELU, HANG, configs=["small"], timeout=1)
    assert time.monotonic() - started < 20
    assert not res.verdict.correct and res.details["status"] == "timeout"
    assert "did not finish within 1 s" in res.verdict.reason
    # The hung child ran under its own uid; nothing of that uid is left running.
    uid = res.details["isolation"]["uid"]
    assert uid != os.geteuid() or os.geteuid() != 0
    deadline = time.monotonic() + 10
    while _uid_alive(uid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _uid_alive(uid) or os.geteuid() != 0  # killed by uid, reaped by the server

    assert zygote.server_pid == server and _alive(server)
    assert _passes()


def test_a_dead_server_is_replaced(no_static_scan) -> None:
    zygote = get_zygote()
    assert _passes()
    old, starts = zygote.server_pid, zygote.starts
    assert old is not None
    os.kill(old, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while zygote.server_pid is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _passes()
    assert zygote.starts == starts + 1 and zygote.server_pid not in (None, old)

    # A candidate cannot kill its fork server (another uid): it fails alone, and the server lives on.
    res = evaluate(RELU, KILLS_SERVER, configs=["small"], timeout=5)
    assert not res.verdict.correct
    if os.geteuid() == 0:
        assert "PermissionError" in res.verdict.reason or res.details["status"] == "timeout"
        assert zygote.starts == starts + 1
    assert _passes()


def test_concurrent_requests_share_one_server() -> None:
    zygote = get_zygote()
    assert _passes()
    starts = zygote.starts
    wrong = IMPLS[0].read_text().replace("(v > 0.f ? v : 0.f)", "(v > 0.f ? v : 1.f)")
    jobs = [*IMPLS, wrong, *IMPLS]
    results: list = [None] * len(jobs)

    def run(k: int) -> None:
        results[k] = evaluate(RELU, jobs[k], configs=["small", "wide"])

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    verdicts = [r.verdict.correct for r in results]
    assert verdicts == [True] * len(IMPLS) + [False] + [True] * len(IMPLS)
    assert "config 'small'" in results[len(IMPLS)].verdict.reason
    assert zygote.starts == starts


def test_candidates_never_see_the_callers_environment(no_static_scan, monkeypatch) -> None:
    assert _passes()  # the server is running before the variable exists
    monkeypatch.setenv("VF_ZYGOTE_PROBE", "seen-by-child-42")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-zygote-secret")
    res = evaluate(RELU, ENV_PROBE.replace("VF_ZYGOTE_PROBE", "OPENAI_API_KEY"), configs=["small"])
    assert not res.verdict.compiled
    assert "probe=unset" in res.verdict.reason and "sk-zygote-secret" not in res.verdict.reason


@pytest.mark.slow
def test_plain_subprocess_fallback(no_static_scan, monkeypatch) -> None:
    monkeypatch.setenv("VERIFORGE_EVAL_ZYGOTE", "0")
    assert not uses_zygote("cpu")
    res = evaluate(RELU, CRASH, configs=["small"])
    assert res.details["status"] == "crash" and "signal 11" in res.verdict.reason


def test_a_server_that_cannot_start_falls_back_to_a_fresh_interpreter(monkeypatch) -> None:
    import sys

    from veriforge.cuda.evaluate import zygote as zmod

    broken = zmod.Zygote(command=[sys.executable, "-c", "import sys; print('no torch here', file=sys.stderr)"])
    monkeypatch.setattr(zmod, "_zygote", broken)
    assert _passes()  # ran in a new interpreter instead
    assert broken.starts == 1 and "no torch here" in broken.broken
    with pytest.raises(zmod.ZygoteError):
        broken.run(req="x", res="y", cwd=".", out="o", err="e", env={}, timeout_s=1)
    assert broken.starts == 1  # a failed start is not retried on every request
