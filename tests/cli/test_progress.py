"""Progress when output is not a terminal, the heartbeat, and Ctrl-C with a resume hint.

The CLI runs as a subprocess with stdout/stderr as pipes (a CI log, ``nohup``): progress must
appear as plain lines on stderr; SIGINT mid-search must exit 130 with the exact command that
resumes the run, and that command must finish the same run from the real SQLite store.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import veriforge
from veriforge.cli.progress import StepProgress, interrupted, resume_command
from veriforge.core.store import RunStore


def test_plain_lines_per_step_when_not_a_terminal() -> None:
    buf = io.StringIO()
    with StepProgress("validating", 3, stream=buf, live=False, heartbeat_s=0, prefix="tasks validate") as bar:
        bar.step(note="a ok")
        bar.step(note="b FAIL")
    lines = buf.getvalue().splitlines()
    assert lines[0] == "tasks validate: started (3 steps)"
    assert lines[1].startswith("tasks validate: 1/3 · a ok · ")
    assert lines[2].startswith("tasks validate: 2/3 · b FAIL · ")


def test_heartbeat_names_the_slow_work_and_repeats() -> None:
    buf = io.StringIO()
    with StepProgress("optimising k", 5, stream=buf, live=False, heartbeat_s=1, prefix="optimize") as bar:
        bar.started(threading.get_ident(), "candidate 3f2a (unroll x4)")
        time.sleep(3.4)
        bar.step(1, key=threading.get_ident())
        time.sleep(0.5)  # a fresh step: no heartbeat right after it
    beats = [ln for ln in buf.getvalue().splitlines() if "still running" in ln]
    assert 2 <= len(beats) <= 4, beats
    prefix = "optimize: still running candidate 3f2a (unroll x4), "
    assert all(b.startswith(prefix) and b.endswith(" s") for b in beats), beats
    seconds = [int(b[len(prefix):-2]) for b in beats]
    # one a second; a loaded machine may wake the heartbeat late, never early
    assert 1 <= seconds[0] <= 2 and seconds == sorted(set(seconds)) and seconds[-1] in (2, 3), beats


def test_no_heartbeat_while_stopping_after_ctrl_c() -> None:
    from veriforge.cli.progress import STOPPING

    buf = io.StringIO()
    STOPPING.set()  # what the first Ctrl-C does (see interrupt_hint)
    try:
        with StepProgress("optimising k", 5, stream=buf, live=False, heartbeat_s=1, prefix="optimize") as bar:
            bar.started(threading.get_ident(), "candidate 3f2a")
            time.sleep(2.4)
    finally:
        STOPPING.clear()
    assert "still running" not in buf.getvalue()


def test_resume_command_replaces_the_run_id() -> None:
    cmd = resume_command(["optimize", "k.cu", "--run-id", "old", "--out", "my out"], "new")
    assert cmd == "veriforge optimize k.cu --out 'my out' --run-id new"
    assert interrupted(None, []) == "interrupted"


def _readline_until(stream, needle: str, timeout: float) -> list[str]:
    """Lines of ``stream`` up to the first containing ``needle`` (fails after ``timeout`` s)."""
    lines: list[str] = []
    done = threading.Event()

    def reader() -> None:
        for line in stream:
            lines.append(line)
            if needle in line:
                done.set()
                return

    threading.Thread(target=reader, daemon=True).start()
    assert done.wait(timeout), f"no {needle!r} within {timeout} s: {''.join(lines)}"
    return lines


def test_sigint_mid_search_prints_resume_command_that_finishes_the_run(tmp_path) -> None:
    out = tmp_path / "out"
    argv = ["optimize", "c2cuda/vector_add", "--budget", "8", "--out", str(out)]
    cmd = [sys.executable, "-m", "veriforge", *argv]
    src = str(Path(veriforge.__file__).resolve().parents[1])  # this checkout, whatever the cwd
    env = {**os.environ, "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=tmp_path)
    try:
        early = _readline_until(proc.stderr, "optimize: 2/8", timeout=240)
        proc.send_signal(signal.SIGINT)
        rest_err = proc.stderr.read()
        stdout = proc.stdout.read()
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = "".join(early) + rest_err
    # progress reached the log as plain lines on stderr, never on stdout
    assert "optimize: started (8 steps)" in stderr and "optimize: 1/8 · best" in stderr
    assert "optimize: " not in stdout and "run " in stdout
    [hint] = [ln for ln in stderr.splitlines() if ln.startswith("interrupted")]
    assert "Traceback" not in stderr
    prefix = "resume with: "
    resume = shlex.split(hint[hint.index(prefix) + len(prefix):])
    assert resume[0] == "veriforge" and resume[1:-2] == argv and resume[-2] == "--run-id"
    run_id = resume[-1]
    store = RunStore(Path(os.environ["VERIFORGE_HOME"]) / "runs.sqlite")
    assert store.get_run(run_id).unfinished  # stopped, resumable
    before = len(store.records("search.node", run_id=run_id))
    assert before >= 1  # what was evaluated before the interrupt is kept

    done = subprocess.run([sys.executable, "-m", "veriforge", *resume[1:]], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    flat = " ".join(done.stdout.split())
    assert f"run {run_id}" in flat and f"resuming after {before} stored evaluation(s)" in flat
    run = store.get_run(run_id)
    assert run.status == "done" and run.resumes == 1
    assert (out / "tree.json").exists()


def _kill_leftovers(marker: str) -> None:
    """SIGKILL this test's own sandboxed programs (their command line names its VERIFORGE_HOME)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(proc.name), signal.SIGKILL)


def test_sigint_during_a_hanging_candidate_prints_the_hint_at_once(tmp_path) -> None:
    """A candidate that never ends blocks a worker thread until its time limit; Ctrl-C must still
    answer in seconds, not when that limit is reached."""
    src = (_bundled_softmax() / "impls" / "naive.cu").read_text()
    hang = src.replace("if (r >= rows) return;", "if (r >= rows) return;\n    volatile int spin = 1; while (spin) { }")
    assert hang != src
    (tmp_path / "hang.cu").write_text(hang)
    home = os.environ["VERIFORGE_HOME"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "VERIFORGE_HEARTBEAT_S": "2",
           "PYTHONPATH": str(Path(veriforge.__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-m", "veriforge", "optimize", "hang.cu", "--task", "softmax_rows",
                             "--budget", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=tmp_path)
    try:
        _readline_until(proc.stderr, "still running candidate", timeout=240)  # the start is stuck
        proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        lines = _readline_until(proc.stderr, "interrupted", timeout=5)
        assert time.monotonic() - t0 < 5
        assert "resume with: veriforge optimize hang.cu --task softmax_rows --budget 3 --run-id " in lines[-1]
        assert proc.wait(timeout=30) == 130  # within the grace, long before the candidate's limit
        assert "still running" not in proc.stderr.read()  # no heartbeat once it is stopping
    finally:
        if proc.poll() is None:
            proc.kill()
        _kill_leftovers(home)


def _bundled_softmax() -> Path:
    from veriforge.cuda.tasks import bundled_tasks

    return next(Path(p) for p in bundled_tasks("c2cuda") if Path(p).name == "softmax_rows")
