"""Red team: a hostile program tries every way out of the sandbox; none may work.

Each probe runs as the program a model would write and reports what it managed; the test then
checks the *host* (files, processes, the listener, the test process itself), not only what the
probe says. Written against our own implementation: where a probe finds a hole, the fix belongs
in the sandbox, not in the probe.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sqlite3
import tempfile
import threading
import time
from pathlib import Path

import pytest

from veriforge.sandbox import IsolationUnavailableError, Limits, Policy, planned_isolation, run, run_python
from veriforge.sandbox.identity import UID_BASE, UID_SPAN

ROOT = os.geteuid() == 0
needs_full = pytest.mark.skipif(not ROOT or not planned_isolation(Policy())["filesystem"],
                                reason="full isolation needs root and mount namespaces")


def _sandbox_uid_processes(only: int) -> list[int]:
    """Live (non-zombie) processes of the run's uid (other tests may run sandboxes concurrently)."""
    from veriforge.sandbox._confine import uid_processes

    assert UID_BASE <= only < UID_BASE + UID_SPAN
    return uid_processes(only)


@needs_full
def test_secrets_are_out_of_reach(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-redteam-openai")
    monkeypatch.setenv("HF_TOKEN", "hf_redteam")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-redteam")
    secret = Path(__file__).with_name(f".redteam-secret-{os.getpid()}")
    secret.write_text("root-only-secret-7731")
    secret.chmod(0o600)
    try:
        res = run_python(
            "import os, glob\n"
            "print('ENV', sorted(os.environ))\n"
            f"paths = ['/etc/shadow', {str(secret)!r}, '/root/.gitconfig', '/root/.bashrc',\n"
            "         '/proc/1/environ', f'/proc/{os.getppid()}/environ']\n"
            "paths += glob.glob('/home/*/.*')[:20] + glob.glob('/proc/*/environ')[:50]\n"
            "for p in paths:\n"
            "    try:\n"
            "        print('READ', p, open(p, 'rb').read(200))\n"
            "    except Exception as e:\n"
            "        print('DENIED', p, type(e).__name__)\n"
            "print('ROOT', os.listdir('/root'))\n"
        )
    finally:
        secret.unlink()
    out = res.stdout_text
    assert res.ok, res.stderr_text
    for word in ("sk-redteam-openai", "hf_redteam", "aws-redteam", "OPENAI_API_KEY", "HF_TOKEN",
                 "root-only-secret-7731"):
        assert word not in out
    shadow = Path("/etc/shadow")
    if shadow.exists():
        first = shadow.read_text().split(":")[0]
        assert "READ /etc/shadow" not in out and first + ":" not in out
    # /root shows only what the interpreter needs (pyenv here), never dotfiles with credentials.
    assert ".gitconfig" not in out.split("ROOT", 1)[1] and ".bashrc" not in out.split("ROOT", 1)[1]
    assert res.isolation["full"] is True and res.isolation["read_all_files"] is False


@needs_full
def test_a_folder_on_the_import_path_that_holds_veriforges_home_does_not_reveal_it(monkeypatch):
    """A script run from a folder that also holds VERIFORGE_HOME (both under /tmp) puts that folder
    on sys.path, and the sandbox binds it back for the interpreter: the home inside must stay
    covered (the run store is world-readable), and what is lent from inside the home (the CPU
    runtime, under a 0700 cache folder) must stay reachable."""
    folder = Path(tempfile.mkdtemp(prefix="vf-redteam-path-"))
    try:
        folder.chmod(0o755)
        (folder / "helper_mod.py").write_text("VALUE = 'helper-visible'\n")
        home = folder / "vfhome"
        lent = home / "cache" / "cpu-runtime" / "lent"
        lent.mkdir(parents=True)
        (home / "cache" / "cpu-runtime").chmod(0o700)
        lent.chmod(0o755)
        (lent / "header.h").write_text("lent-visible\n")
        (home / "runs.sqlite").write_text("store-secret-5521\n")
        (home / "runs.sqlite").chmod(0o644)
        monkeypatch.setenv("VERIFORGE_HOME", str(home))
        monkeypatch.syspath_prepend(str(folder))
        res = run_python(
            "import sys\n"
            "for p in sys.argv[1:]:\n"
            "    try:\n"
            "        print('READ', p, open(p).read().strip())\n"
            "    except Exception as e:\n"
            "        print('DENIED', p, type(e).__name__)\n",
            args=[str(folder / "helper_mod.py"), str(home / "runs.sqlite"), str(lent / "header.h")],
            policy=Policy(expose=(str(lent),)),
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    out = res.stdout_text
    assert res.ok, res.stderr_text + out
    assert f"READ {folder / 'helper_mod.py'} VALUE = 'helper-visible'" in out  # the folder is still bound back
    assert "store-secret-5521" not in out and f"DENIED {home / 'runs.sqlite'}" in out
    assert f"READ {lent / 'header.h'} lent-visible" in out
    assert str(home) in res.isolation["filesystem_view"]["hidden"]


@needs_full
def test_nothing_outside_the_workdir_is_writable(tmp_path, monkeypatch):
    home = tmp_path / "vfhome"
    home.mkdir()
    monkeypatch.setenv("VERIFORGE_HOME", str(home))
    store = home / "runs.sqlite"
    with sqlite3.connect(store) as db:
        db.execute("create table t(x)")
        db.execute("insert into t values (42)")
    store.chmod(0o666)  # even a world-writable store must be out of reach
    repo_file = Path(__file__).with_name(f".redteam-write-{os.getpid()}")
    targets = [str(store), str(repo_file), "/tmp/vf-redteam-escape", "/dev/shm/vf-redteam-escape",
               "/var/tmp/vf-redteam-escape", "/etc/vf-redteam", str(Path.home() / "vf-redteam"),
               "/root/.cache/veriforge/x"]
    res = run_python(
        "import sys\n"
        "for p in sys.argv[1:]:\n"
        "    try:\n"
        "        open(p, 'w').write('pwned')\n"
        "        print('WROTE', p)\n"
        "    except Exception as e:\n"
        "        print('DENIED', p, type(e).__name__)\n"
        "open('mine.txt', 'w').write('ok')\n",
        args=targets,
    )
    assert res.ok, res.stderr_text
    with sqlite3.connect(store) as db:
        assert db.execute("select x from t").fetchall() == [(42,)]
    for t in targets:
        if t != str(store):
            assert not Path(t).exists(), t
    # Writes to the private /tmp land in the sandbox's own tmpfs (gone afterwards), not the host's.
    assert "WROTE " + str(store) not in res.stdout_text
    assert "WROTE " + str(repo_file) not in res.stdout_text


@needs_full
def test_network_is_unreachable_even_on_loopback():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    srv.settimeout(0.2)
    port = srv.getsockname()[1]
    accepted: list[bool] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                accepted.append(True)
                conn.close()
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        res = run_python(
            "import socket, sys\n"
            "for host in ('127.0.0.1', 'localhost', '::1', '10.0.2.2', '8.8.8.8'):\n"
            "    try:\n"
            "        socket.create_connection((host, int(sys.argv[1])), timeout=1).close(); print('CONNECTED', host)\n"
            "    except Exception as e:\n"
            "        print('BLOCKED', host, type(e).__name__)\n",
            args=[port],
        )
    finally:
        stop.set()
        thread.join()
        srv.close()
    assert "CONNECTED" not in res.stdout_text
    assert not accepted


@needs_full
def test_no_process_survives_the_run_and_the_caller_survives_the_program():
    me = os.getpid()
    res = run_python(
        "import os, signal, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "        time.sleep(60)\n"
        "    os._exit(0)\n"
        "for target in (int(sys.argv[1]), os.getppid(), 1, -1):\n"
        "    try:\n"
        "        os.kill(target, signal.SIGKILL); print('KILLED', target)\n"
        "    except Exception as e:\n"
        "        print('REFUSED', target, type(e).__name__)\n"
        "print('ALIVE')\n",
        args=[me],
    )
    time.sleep(0.2)
    assert os.getpid() == me  # we are still here
    left = _sandbox_uid_processes(res.isolation["uid"])
    assert not left, f"sandbox processes survived the run: {sorted(left)}"
    assert res.isolation["process_cleanup"] in ("pid-namespace", "uid-kill", "uid-kill+subreaper")


@needs_full
def test_host_processes_are_invisible():
    res = run_python("import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n")
    pids = eval(res.stdout_text)
    assert os.getpid() not in pids or len(pids) <= 3
    assert len(pids) <= 3  # the supervisor, the program, maybe one helper


@needs_full
def test_open_files_are_limited():
    res = run_python(
        "import os\nn = 0\n"
        "try:\n"
        "    while True:\n"
        "        os.open('/dev/null', os.O_RDONLY); n += 1\n"
        "except OSError as e:\n"
        "    print('STOPPED', n, e.errno)\n",
        policy=Policy(max_open_files=64),
    )
    count = int(res.stdout_text.split()[1])
    assert count <= 64


def test_strict_policy_refuses_without_full_isolation(monkeypatch):
    import dataclasses

    from veriforge.sandbox import runner

    real = runner.probe()
    monkeypatch.setattr(runner, "probe", lambda: dataclasses.replace(real, network_namespace=False,
                                                                     network_reason="probe says no"))
    with pytest.raises(IsolationUnavailableError, match="network"):
        run(["true"], policy=Policy(strict=True))
    # Not strict: it runs, and says plainly what was missing.
    res = run(["true"], policy=Policy(strict=False))
    assert res.isolation["full"] is False
    assert any("network" in m for m in res.isolation["missing"])


def test_strict_mode_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("VERIFORGE_SANDBOX__STRICT", "1")
    assert Policy().strict is True
    monkeypatch.setenv("VERIFORGE_SANDBOX__STRICT", "0")
    assert Policy().strict is False


@needs_full
def test_a_program_that_exhausts_everything_is_a_result_not_a_crash():
    res = run_python(
        "import os\nwhile True:\n    os.fork()\n",
        limits=Limits(timeout_s=3, max_procs=16),
    )
    assert res.status in ("timeout", "ok", "killed", "crashed")
    assert not _sandbox_uid_processes(res.isolation["uid"])


@needs_full
def test_sandbox_files_of_the_caller_are_private(tmp_path):
    """The harness's own temp files (e.g. reference outputs) are invisible to the program."""
    private = Path("/tmp") / f"vf-redteam-ref-{os.getpid()}.npy"
    private.write_text("reference-answer-1234")
    private.chmod(0o644)
    try:
        res = run_python("import glob\nprint(glob.glob('/tmp/*'))\n"
                         f"print(open({str(private)!r}).read())\n")
    finally:
        private.unlink()
    assert "reference-answer-1234" not in res.stdout_text
    assert str(private) not in res.stdout_text


@needs_full
@pytest.mark.parametrize("sig", [signal.SIGSTOP, signal.SIGTERM])
def test_signals_to_the_supervisor_do_not_leak(sig):
    res = run_python(f"import os\nos.kill(1, {int(sig)})\nprint('done')\n", limits=Limits(timeout_s=5))
    assert res.status in ("ok", "timeout")


@needs_full
def test_spawned_long_lived_programs_are_confined_and_get_their_pipes():
    """spawn(): the door for servers (the CPU runtime's kernel server) — same policy, lent fds."""
    import subprocess
    import sys

    from veriforge.sandbox import spawn

    r, w = os.pipe()
    code = ("import os, sys\n"
            "fd = int(sys.argv[1])\n"
            "def probe(p):\n"
            "    try:\n"
            "        open(p).read(); return 'READ'\n"
            "    except Exception as e:\n"
            "        return type(e).__name__\n"
            "os.write(fd, ('%s %s %d' % (probe('/etc/shadow'), probe('/root/.gitconfig'), os.getuid())).encode())\n")
    proc = spawn([sys.executable, "-c", code, str(w)], pass_fds=(w,), stdout=subprocess.DEVNULL)
    os.close(w)
    try:
        assert proc.wait(timeout=60) == 0
        answer = os.read(r, 1000).decode().split()
    finally:
        os.close(r)
    assert answer[0] != "READ" and answer[1] != "READ"
    assert int(answer[2]) >= UID_BASE
    assert proc.isolation["filesystem"] is True and proc.isolation["network"] is True


@needs_full
def test_kernel_host_code_cannot_read_secrets(tmp_path):
    """A CUDA module's host function (untrusted C++) runs in the sandboxed kernel server."""
    import numpy as np

    from veriforge.cuda import cpu

    src = r'''
    #include <cstdio>
    extern "C" void probe(int* out) {
        FILE* f = fopen("/etc/shadow", "r");
        out[0] = f ? 1 : 0;
        if (f) fclose(f);
        FILE* g = fopen("/tmp/vf-kernel-escape", "w");
        out[1] = g ? 1 : 0;
        if (g) fclose(g);
    }
    '''
    mod = cpu.compile(src)
    out = np.zeros(2, np.int32)
    mod.call("probe", [out])
    assert out.tolist() == [0, 1]  # no secret; /tmp is the sandbox's own
    assert not Path("/tmp/vf-kernel-escape").exists()


@needs_full
def test_compilers_fed_candidate_source_cannot_read_secrets():
    """An #include of a secret is a read by the compiler: it runs confined, so the secret's tokens
    never reach the diagnostics (without the sandbox g++ would quote them: "'vfsecret…' does not name a type")."""
    from veriforge.cuda import cpu
    from veriforge.errors import CompileError

    secret = Path(__file__).with_name(f".redteam-include-{os.getpid()}.h")
    secret.write_text("vfsecrettoken4711 leaked;\n")
    secret.chmod(0o600)
    try:
        with pytest.raises(CompileError) as err:
            cpu.build_program(f'#include "{secret}"\nint main() {{ return 0; }}\n')
    finally:
        secret.unlink()
    text = str(err.value) + (getattr(err.value, "log", "") or "")
    assert "vfsecrettoken4711" not in text
    assert "Permission denied" in text or "No such file" in text
