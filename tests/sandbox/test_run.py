"""Basic behaviour of run/run_python: inputs, outputs, statuses, errors, JSON."""

from __future__ import annotations

import json
import signal

import pytest

from veriforge.errors import ConfigError, SandboxError
from veriforge.sandbox import ExecutableNotFoundError, Limits, SandboxResult, WorkdirError, run, run_python
from veriforge.sandbox.result import classify


def test_argv_stdin_and_exit_code():
    res = run(["sh", "-c", 'read line; echo "got $line"; echo oops >&2; exit 3'], stdin=b"hello\n")
    assert res.status == "ok"
    assert res.exit_code == 3 and res.signal is None
    assert res.stdout == b"got hello\n" and res.stderr == b"oops\n"
    assert not res.ok


def test_argv0_is_the_name_the_program_sees_while_the_file_run_is_argv_0():
    res = run(["cat", "/proc/self/cmdline"], argv0="./histogram")
    assert res.ok, res.stderr
    assert res.stdout.split(b"\0")[:2] == [b"./histogram", b"/proc/self/cmdline"]
    assert run(["cat", "/proc/self/cmdline"]).stdout.split(b"\0")[0] == b"cat"


def test_large_stdin_is_streamed():
    data = bytes(range(256)) * 4096  # 1 MiB, larger than any pipe buffer
    res = run(["sha256sum"], stdin=data)
    import hashlib

    assert res.stdout_text.split()[0] == hashlib.sha256(data).hexdigest()


def test_run_python_args_and_imports_of_files():
    res = run_python(
        "import sys, helper\nprint(helper.double(int(sys.argv[1])))",
        args=[21],
        files={"helper.py": "def double(x):\n    return 2 * x\n"},
    )
    assert res.ok and res.stdout == b"42\n"


def test_crash_is_reported_with_signal():
    res = run_python("import ctypes\nctypes.string_at(0)")
    assert res.status == "crashed"
    assert res.signal == signal.SIGSEGV and res.signal_name == "SIGSEGV"
    assert res.exit_code is None


def test_abort_is_a_crash():
    res = run_python("import os\nos.abort()")
    assert res.status == "crashed" and res.signal_name == "SIGABRT"


def test_cpu_and_rss_are_measured():
    res = run_python("x = bytearray(64 * 2**20)\ns = 0\nfor i in range(3_000_000):\n    s += i\n")
    assert res.ok
    assert res.cpu_s > 0.05
    assert res.peak_rss_mb >= 64
    assert res.wall_s > 0


def test_to_dict_is_json():
    res = run(["printf", "a\\377b"])
    d = json.loads(json.dumps(res.to_dict()))
    assert d["status"] == "ok" and d["stdout"] == "a\ufffdb"
    assert d["isolation"]["limits"]["timeout_s"] == 60
    assert isinstance(res, SandboxResult)


def test_missing_executable_is_a_sandbox_error():
    with pytest.raises(ExecutableNotFoundError, match="no-such-binary-xyz"):
        run(["no-such-binary-xyz"])


def test_program_failure_is_not_an_exception():
    res = run("exit 7")
    assert res.exit_code == 7


def test_bad_file_names_are_refused():
    with pytest.raises(WorkdirError):
        run("true", files={"../escape.txt": "x"})
    with pytest.raises(WorkdirError):
        run("true", files={"/etc/evil": "x"})
    with pytest.raises(SandboxError):
        run([])


def test_limits_validation_and_unlimited_values():
    with pytest.raises(ConfigError):
        Limits(timeout_s=-1)
    rl = Limits(cpu_s=None, memory_mb=0, file_size_mb=None, max_procs=None).rlimits(nproc=None)
    assert rl == {"core": (0, 0)}
    rl = Limits(cpu_s=2.5, memory_mb=100).rlimits(nproc=7)
    assert rl["cpu"] == (3, 4) and rl["as"] == (100 << 20, 100 << 20) and rl["nproc"] == (7, 7)


def test_limits_from_settings():
    from types import SimpleNamespace

    section = SimpleNamespace(
        timeout_s=5, cpu_s=4, memory_mb=512, file_size_mb=8, max_procs=9, max_output_bytes=1000, network=False
    )
    assert Limits.from_settings(section) == Limits(5, 4, 512, 8, 9, 1000)
    assert Limits.from_settings(SimpleNamespace(sandbox=section)).memory_mb == 512
    with pytest.raises(ConfigError):
        Limits.from_settings(object())


def test_limits_from_real_settings_if_present():
    config = pytest.importorskip("veriforge.core.config")
    if not hasattr(config, "SandboxSettings"):
        pytest.skip("SandboxSettings not there yet")
    settings = config.SandboxSettings(timeout_s=7, memory_mb=300)
    limits = Limits.from_settings(settings)
    assert limits.timeout_s == 7 and limits.memory_mb == 300


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"exit_code": 0, "signal": None, "stderr": b""}, "ok"),
        ({"exit_code": 1, "signal": None, "stderr": b"Traceback\nMemoryError\n"}, "memory"),
        ({"exit_code": 0, "signal": None, "stderr": b"MemoryError mentioned but fine"}, "ok"),
        ({"exit_code": None, "signal": signal.SIGABRT, "stderr": b"what():  std::bad_alloc"}, "memory"),
        ({"exit_code": None, "signal": signal.SIGABRT, "stderr": b""}, "crashed"),
        ({"exit_code": 2, "signal": None, "stderr": b"fatal error: runtime: out of memory"}, "memory"),
        ({"exit_code": None, "signal": signal.SIGXCPU, "stderr": b""}, "killed"),
        ({"exit_code": None, "signal": signal.SIGXFSZ, "stderr": b""}, "killed"),
        ({"exit_code": 153, "signal": None, "stderr": b"File size limit exceeded"}, "killed"),
        ({"exit_code": None, "signal": signal.SIGKILL, "stderr": b""}, "memory"),
        ({"exit_code": None, "signal": signal.SIGSEGV, "stderr": b""}, "crashed"),
    ],
)
def test_classification(kw, expected):
    status, reason = classify(timed_out=False, cpu_s=0.1, cpu_limit=10, **kw)
    assert status == expected, reason


def test_classification_timeout_wins_and_sigkill_at_cpu_limit_is_killed():
    assert (
        classify(exit_code=None, signal=9, timed_out=True, stderr=b"MemoryError", cpu_s=0, cpu_limit=1)[0] == "timeout"
    )
    assert classify(exit_code=None, signal=9, timed_out=False, stderr=b"", cpu_s=2.0, cpu_limit=1)[0] == "killed"
