"""Environment, network, filesystem and identity isolation."""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from veriforge.sandbox import capabilities, run, run_python
from veriforge.sandbox.capabilities import probe


def test_environment_is_scrubbed(monkeypatch):
    monkeypatch.setenv("VF_TEST_SECRET", "hunter2")
    res = run_python(
        "import os, json; print(json.dumps(dict(os.environ)))",
        env={"VF_ADDED": "yes"},
    )
    env = __import__("json").loads(res.stdout)
    assert "VF_TEST_SECRET" not in env
    assert env["VF_ADDED"] == "yes"
    assert set(env) <= {
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "LC_ALL",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        "VF_ADDED",
    }
    cwd = run("pwd").stdout_text.strip()
    assert env["HOME"].startswith(str(Path(cwd).parent))
    assert env["TMPDIR"].startswith(env["HOME"])


@pytest.fixture
def listener():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    accepted: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                accepted.append(conn.recv(16))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield srv.getsockname()[1], accepted
    srv.close()


CONNECT = """
import socket, sys
s = socket.socket()
s.settimeout(3)
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"hello")
    print("connected")
except OSError as exc:
    print("refused", type(exc).__name__)
"""


@pytest.mark.skipif(not probe().network_namespace, reason="network namespaces are not available here")
def test_network_isolation_blocks_loopback_server_in_parent(listener):
    port, accepted = listener
    isolated = run_python(CONNECT, args=[port])
    assert isolated.isolation["network"] is True
    assert isolated.stdout_text.startswith("refused"), isolated.stdout_text + isolated.stderr_text
    opened = run_python(CONNECT, args=[port], network=True)
    assert opened.isolation["network"] is False
    assert opened.stdout_text.strip() == "connected", opened.stderr_text
    assert accepted == [b"hello"]


def test_isolation_is_reported_truthfully_without_namespaces(monkeypatch, listener):
    """Where unshare is unavailable the run still works and says the network was NOT isolated."""
    import dataclasses

    from veriforge.sandbox import runner

    real = runner.probe()
    fake = dataclasses.replace(
        real, unshare=None, pid_namespace=False, network_namespace=False, network_reason="unshare not installed"
    )
    monkeypatch.setattr(runner, "probe", lambda: fake)
    port, _ = listener
    res = run_python(CONNECT, args=[port])
    assert res.isolation["network"] is False
    assert "unshare not installed" in res.isolation["network_detail"]
    assert res.stdout_text.strip() == "connected"


def test_workdir_is_private_and_removed():
    res = run_python(
        "import os, stat; st = os.stat('.'); print(os.getcwd(), oct(stat.S_IMODE(st.st_mode)), st.st_uid)\n"
        "print(open('data/in.txt').read())",
        files={"data/in.txt": "payload"},
    )
    cwd, mode, owner = res.stdout_text.splitlines()[0].split()
    assert res.stdout_text.splitlines()[1] == "payload"
    assert mode == "0o700"
    assert int(owner) == res.isolation["uid"]
    assert not os.path.exists(cwd)
    assert res.workdir is None


def test_each_run_gets_a_fresh_workdir():
    first = run("echo leftover > note.txt; pwd", keep_workdir=True)
    second = run("ls; pwd")
    try:
        assert first.workdir is not None and (first.workdir / "note.txt").read_text() == "leftover\n"
        assert second.stdout_text.split() == [second.stdout_text.split()[-1]]  # ls printed nothing
        assert second.stdout_text.strip() != str(first.workdir)
    finally:
        import shutil

        shutil.rmtree(first.workdir, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="privilege drop applies when running as root")
def test_root_is_dropped_and_cannot_write_outside(tmp_path):
    outside = Path("/tmp") / f"vf-sbx-outside-{os.getpid()}"
    outside.mkdir(mode=0o777, exist_ok=True)  # world-writable: only the sandbox's own view protects it
    outside.chmod(0o777)
    try:
        res = run_python(
            f"import os\nprint(os.getuid())\nopen({str(outside / 'x')!r}, 'w')",
        )
        assert int(res.stdout_text.split()[0]) != 0
        assert res.isolation["dropped_root"] is True
        # /tmp is private to the sandbox: the host's directory is not even visible.
        assert b"FileNotFoundError" in res.stderr or b"PermissionError" in res.stderr
        assert not (outside / "x").exists()
    finally:
        outside.rmdir()


def test_parallel_runs_get_distinct_uids():
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: run("id -u; sleep 0.3"), range(4)))
    uids = {r.stdout_text.strip() for r in results}
    assert all(r.status == "ok" for r in results)
    if os.geteuid() == 0:
        assert len(uids) == 4


def test_caller_cwd_is_used_kept_and_ownership_restored(tmp_path):
    base = Path("/tmp") / f"vf-sbx-cwd-{os.getpid()}"
    base.mkdir(mode=0o755)
    try:
        (base / "given.txt").write_text("mine")
        res = run("cat given.txt; echo new > made.txt", cwd=base, files={"sub/extra.txt": "x"})
        assert res.stdout == b"mine"
        assert (base / "made.txt").read_text() == "new\n"
        assert (base / "sub" / "extra.txt").exists()
        for p in (base, base / "given.txt", base / "made.txt", base / "sub" / "extra.txt"):
            assert p.stat().st_uid == os.getuid(), p
        assert stat.S_IMODE(base.stat().st_mode) == 0o755
    finally:
        import shutil

        shutil.rmtree(base)


def test_capabilities_describe_this_machine():
    caps = capabilities()
    assert caps["network_isolation"] == probe().network_namespace
    assert isinstance(caps["pid_namespace"], bool)
    for key in ("process_cleanup", "process_limit", "user", "rlimits", "cgroups"):
        assert isinstance(caps[key], str) and caps[key]
    import json

    json.dumps(caps)


def test_program_inherits_only_standard_fds():
    """The supervisor's report pipe and the uid lock must not leak into the program."""
    res = run("ls /proc/self/fd")
    assert sorted(int(x) for x in res.stdout_text.split()) == [0, 1, 2, 3]  # 3: ls's own listing


@pytest.mark.skipif(os.geteuid() != 0, reason="uids are claimed only when running as root")
def test_uid_claims_are_exclusive_and_released():
    from veriforge.sandbox.identity import acquire_user

    users = [acquire_user() for _ in range(20)]
    try:
        assert len({u.uid for u in users}) == 20
        assert all(u.lock_path.exists() for u in users)
    finally:
        for u in users:
            u.release()
    assert not any(u.lock_path.exists() for u in users)
