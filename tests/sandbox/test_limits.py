"""Each resource limit is really enforced: these tests fail if the limit is dropped."""

from __future__ import annotations

import os
import shutil
import threading
import time

from veriforge.sandbox import Limits, run, run_python
from veriforge.sandbox.identity import UID_BASE, UID_SPAN


def _descendants(root: int) -> list[int]:
    """Live (non-zombie) processes below ``root`` in the process tree. Scoped to this test's own
    process: other jobs on the machine (builds, other sandboxed runs) never show up here."""
    children: dict[int, list[int]] = {}
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(e))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _sandbox_uid_tasks(uid: int) -> int:
    """Live tasks owned by the run's own ``uid`` right now: leftovers of that run show up here, other
    sandboxed jobs on the machine (each with a uid of its own) never do."""
    from veriforge.sandbox._confine import uid_processes

    assert UID_BASE <= uid < UID_BASE + UID_SPAN
    return len(uid_processes(uid))


def test_process_limit_caps_forks_at_max_procs():
    code = """
import os, time
n = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as exc:
    print("forks", n, type(exc).__name__, flush=True)
else:
    print("forks", n, "unlimited", flush=True)
"""
    res = run_python(code, limits=Limits(max_procs=12, timeout_s=20))
    words = res.stdout_text.split()
    assert words[0] == "forks", res.stderr_text
    assert int(words[1]) < 12  # the interpreter itself is one of the 12 tasks
    assert words[2] == "BlockingIOError"  # EAGAIN from fork
    assert res.status == "ok" and res.exit_code == 0
    assert res.isolation["leftovers_killed"] >= int(words[1])  # the sleeping children were killed
    assert res.wall_s < 10


def test_fork_bomb_is_contained_and_the_machine_recovers():
    mine_before = set(_descendants(os.getpid()))
    start = time.monotonic()
    # the bomb starts in one background subshell (the shell's only fork, made while the quota is
    # empty: a failed fork in the top-level shell itself makes dash exit 2); the shell then waits in
    # a loop of builtins and says it survived -- neither needs a fork, so a busy machine (bomb
    # processes slow to die) cannot make the shell's own commands fail to start
    res = run("bomb(){ bomb|bomb& }; (bomb) & i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo survived",
              limits=Limits(timeout_s=8, max_procs=32))
    assert time.monotonic() - start < 8  # contained by NPROC, not merely by the timeout
    assert res.status == "ok", res.reason
    assert b"survived" in res.stdout
    assert b"fork" in res.stderr.lower()  # the shell was refused forks
    time.sleep(0.2)
    uid = res.isolation["uid"]
    assert UID_BASE <= uid < UID_BASE + UID_SPAN  # the bomb ran under a sandbox uid of its own
    assert _sandbox_uid_tasks(uid) == 0
    # nothing of the run is left below this test's process either (scoped: a busy machine is fine)
    assert set(_descendants(os.getpid())) <= mine_before


def _pids_with(marker: str) -> list[int]:
    found = []
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    found.append(int(e))
        except OSError:
            continue
    return found


def _timeout_kills_grandchildren():
    marker_bg, marker_sid = f"{os.getpid() % 1000}.4711", f"{os.getpid() % 1000}.4712"
    seen: set[int] = set()
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.update(_pids_with(marker_bg) + _pids_with(marker_sid))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        res = run(
            f"sleep {marker_bg} & setsid sleep {marker_sid} & echo started; sleep 30",
            limits=Limits(timeout_s=1.0),
        )
    finally:
        stop.set()
        watcher.join()
    assert res.status == "timeout"
    assert res.stdout == b"started\n"
    assert 0.9 <= res.wall_s < 5
    assert len(seen) >= 2, "the grandchildren never ran"
    assert _pids_with(marker_bg) == [] and _pids_with(marker_sid) == []
    for pid in seen:
        assert not os.path.exists(f"/proc/{pid}")
    return res


def test_timeout_kills_background_and_setsid_grandchildren():
    res = _timeout_kills_grandchildren()
    assert res.isolation["process_cleanup"] == "pid-namespace"


def test_timeout_kills_grandchildren_without_pid_namespace(monkeypatch):
    """The fallback (child subreaper + /proc walk) also gets every descendant."""
    import dataclasses

    from veriforge.sandbox import runner

    real = runner.probe()
    monkeypatch.setattr(runner, "probe", lambda: dataclasses.replace(real, pid_namespace=False))
    res = _timeout_kills_grandchildren()
    assert res.isolation["pid_namespace"] is False
    assert res.isolation["process_cleanup"] == ("uid-kill+subreaper" if os.geteuid() == 0 else "subreaper")


def test_background_process_is_killed_when_program_exits():
    marker = f"{os.getpid() % 1000}.4713"
    res = run(f"setsid sleep {marker} & echo $!", limits=Limits(timeout_s=10))
    assert res.status == "ok" and res.exit_code == 0
    assert res.wall_s < 5
    assert res.isolation["leftovers_killed"] >= 1
    assert _pids_with(marker) == []


def test_ten_gigabyte_allocation_fails_cleanly_under_memory_limit():
    res = run_python("buf = bytearray(10 * 2**30)\nprint('allocated')", limits=Limits(memory_mb=1024))
    assert res.status == "memory", res.reason
    assert b"allocated" not in res.stdout
    assert b"MemoryError" in res.stderr
    assert res.peak_rss_mb < 1024


def test_allocation_below_the_limit_succeeds():
    res = run_python("buf = bytearray(200 * 2**20)\nprint(len(buf))", limits=Limits(memory_mb=1024))
    assert res.status == "ok" and res.stdout_text.strip() == str(200 * 2**20)
    assert res.peak_rss_mb >= 200


def test_cpu_bound_loop_is_killed_by_cpu_limit():
    res = run_python("while True:\n    pass", limits=Limits(cpu_s=1, timeout_s=20))
    assert res.status == "killed", res.reason
    assert res.signal_name in ("SIGXCPU", "SIGKILL")
    assert 0.8 <= res.cpu_s < 3
    assert res.wall_s < 10  # well before the wall clock


def test_file_size_limit_stops_a_c_style_writer():
    res = run("exec head -c 3000000 /dev/zero > big.bin", limits=Limits(file_size_mb=1))
    assert res.status == "killed" and res.signal_name == "SIGXFSZ", res.reason
    ok = run("exec head -c 3000000 /dev/zero > big.bin", limits=Limits(file_size_mb=4))
    assert ok.status == "ok" and ok.exit_code == 0


def test_file_size_limit_refuses_python_writes():
    code = "open('big.bin', 'wb').write(b'x' * (3 * 2**20))\nprint('wrote')"
    res = run_python(code, limits=Limits(file_size_mb=1), keep_workdir=True)
    try:
        assert res.status == "killed", res.reason
        assert b"wrote" not in res.stdout
        assert os.path.getsize(res.workdir / "big.bin") <= 2**20
    finally:
        shutil.rmtree(res.workdir, ignore_errors=True)
    assert run_python(code, limits=Limits(file_size_mb=8)).stdout == b"wrote\n"


def test_output_cap_reports_truncation():
    res = run(["head", "-c", "300000", "/dev/zero"], limits=Limits(max_output_bytes=1000))
    assert res.status == "ok"
    assert len(res.stdout) == 1000
    assert res.stdout_truncated and res.stdout_dropped_bytes == 299_000
    assert not res.stderr_truncated
    full = run(["head", "-c", "300000", "/dev/zero"], limits=Limits(max_output_bytes=10**6))
    assert len(full.stdout) == 300_000 and not full.stdout_truncated


def test_stderr_is_capped_separately():
    res = run("head -c 5000 /dev/zero >&2; echo out", limits=Limits(max_output_bytes=100))
    assert res.stdout == b"out\n"
    assert len(res.stderr) == 100 and res.stderr_dropped_bytes == 4900
