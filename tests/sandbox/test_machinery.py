"""Failures of the sandbox machinery itself: clear errors, backstop kill, no leaked secrets."""

from __future__ import annotations

import os
import threading
import time

import pytest

from veriforge.sandbox import Limits, SandboxSetupError, run, run_async, run_python_async, runner


def test_supervisor_failure_is_a_sandbox_error(tmp_path, monkeypatch):
    broken = tmp_path / "broken.py"
    broken.write_text("import sys\nsys.stderr.write('supervisor exploded')\nsys.exit(3)\n")
    monkeypatch.setattr(runner, "SUPERVISOR", str(broken))
    with pytest.raises(SandboxSetupError, match="supervisor exploded"):
        run(["true"])


def test_backstop_kills_a_hung_supervisor(tmp_path, monkeypatch):
    hung = tmp_path / "hung.py"
    hung.write_text("import time\ntime.sleep(60.4242)\n")
    monkeypatch.setattr(runner, "SUPERVISOR", str(hung))
    monkeypatch.setattr(runner, "BACKSTOP_GRACE_S", 0.5)
    start = time.monotonic()
    res = run(["true"], limits=Limits(timeout_s=0.5))
    assert time.monotonic() - start < 5
    assert res.status == "timeout" and "supervisor unresponsive" in res.reason
    time.sleep(0.1)
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                with open(f"/proc/{e}/cmdline", "rb") as fh:
                    assert str(hung).encode() not in fh.read(), "hung supervisor survived the backstop"
            except OSError:
                pass


def test_caller_env_is_not_in_any_command_line():
    """Secrets passed in env= must not be readable from /proc/*/cmdline by other users."""
    secret = f"tok-{os.getpid()}-{time.monotonic_ns()}"

    hits: list[str] = []

    def scan() -> None:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            for e in os.listdir("/proc"):
                if e.isdigit():
                    try:
                        with open(f"/proc/{e}/cmdline", "rb") as fh:
                            if secret.encode() in fh.read():
                                hits.append(e)
                    except OSError:
                        pass
            time.sleep(0.02)

    t = threading.Thread(target=scan)
    t.start()
    out = run("sleep 0.8; echo $API_TOKEN", env={"API_TOKEN": secret})
    t.join()
    assert out.stdout_text.strip() == secret  # the program does get it
    assert hits == []


async def test_async_wrappers_run_concurrently():
    import asyncio

    start = time.monotonic()
    a, b = await asyncio.gather(
        run_async("sleep 0.5; echo a"), run_python_async("import time; time.sleep(0.5); print('b')")
    )
    assert (a.stdout, b.stdout) == (b"a\n", b"b\n")
    assert time.monotonic() - start < 1.5


def test_supervisor_starts_from_bytecode_and_falls_back_to_the_script(tmp_path, monkeypatch):
    """The supervisor starts for every run: imported from its cached bytecode where that can be had
    (a script is compiled from source each time), run as a script where it cannot -- same result."""
    src = os.path.dirname(runner.SUPERVISOR)
    for name in ("_supervisor.py", "_confine.py"):
        (tmp_path / "boot").mkdir(exist_ok=True)
        (tmp_path / "boot" / name).write_text(open(os.path.join(src, name)).read())
    copy = str(tmp_path / "boot" / "_supervisor.py")
    monkeypatch.setattr(runner, "SUPERVISOR", copy)
    monkeypatch.setattr(runner, "_boot_memo", {})

    monkeypatch.setattr(runner.sys, "dont_write_bytecode", True)  # PYTHONDONTWRITEBYTECODE: no .pyc written
    assert runner._supervisor_command()[-1] == copy  # run as a script
    assert not (tmp_path / "boot" / "__pycache__").exists()
    assert run(["echo", "script"]).stdout == b"script\n"

    monkeypatch.setattr(runner.sys, "dont_write_bytecode", False)
    monkeypatch.setattr(runner, "_boot_memo", {})
    argv = runner._supervisor_command()
    assert argv[-3] == "-c" and argv[-1] == copy  # imported; its path still names it on the command line
    cached = sorted(p.name.split(".")[0] for p in (tmp_path / "boot" / "__pycache__").iterdir())
    assert cached == ["_confine", "_supervisor"]
    res = run(["echo", "module"])
    assert res.status == "ok" and res.stdout == b"module\n"
    # A stale cache (the file changed since) is rewritten: its header records the new mtime and size.
    import importlib.util

    with open(copy, "a") as fh:
        fh.write("\n# changed\n")
    later = int(time.time()) + 5
    os.utime(copy, (later, later))
    pyc = importlib.util.cache_from_source(copy)
    assert int.from_bytes(open(pyc, "rb").read()[8:12], "little") != later
    assert runner._bytecode_ready(copy)
    head = open(pyc, "rb").read(16)
    assert int.from_bytes(head[8:12], "little") == later
    assert int.from_bytes(head[12:16], "little") == os.path.getsize(copy)
