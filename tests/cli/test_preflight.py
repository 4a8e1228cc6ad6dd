"""The checks a long command makes before it starts: model answers, output location, output lock.

The model check talks real HTTP to :class:`FakeOpenAIServer` (and to a closed port); the lock is a
real ``fcntl`` lock held by a second process.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from veriforge.cli.preflight import (
    LOCK_NAME,
    OutputLocationError,
    OutputLock,
    OutputLockedError,
    check_model,
    check_out_dir,
    check_out_file,
    prepare_out,
)
from veriforge.llm.errors import ModelUnavailableError
from veriforge.llm.testing import FakeOpenAIServer


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_model_that_answers_passes_with_one_cheap_request() -> None:
    with FakeOpenAIServer() as server:
        line = check_model(f"fake-model@{server.base_url}")
        assert server.base_url in line
        assert [(r.method, r.path) for r in server.requests] == [("GET", "/v1/models")]
        assert not server.chat_requests  # nothing spent, nothing a benchmark would count


def test_closed_port_fails_in_seconds_naming_the_endpoint() -> None:
    port = _closed_port()
    t0 = time.monotonic()
    with pytest.raises(ModelUnavailableError) as err:
        check_model(f"vllm:Qwen/Qwen2.5-7B@http://127.0.0.1:{port}/v1")
    assert time.monotonic() - t0 < 10
    text = str(err.value)
    assert f"http://127.0.0.1:{port}/v1" in text and "vllm serve Qwen/Qwen2.5-7B" in text
    assert "\n" not in text


def test_server_that_errors_or_serves_another_model_fails_fast() -> None:
    with FakeOpenAIServer(require_api_key="sk-right") as server:
        with pytest.raises(ModelUnavailableError, match="HTTP 401"):
            check_model(f"fake-model@{server.base_url}")
    with FakeOpenAIServer(models=["other-model"]) as server:
        with pytest.raises(ModelUnavailableError, match=r"does not serve 'fake-model'.*other-model"):
            check_model(f"fake-model@{server.base_url}")


def _no_model_list(monkeypatch) -> None:
    """The server answers GET /v1/models with 404, as some OpenAI-compatible proxies do."""
    from veriforge.llm import testing

    def do_get(self) -> None:
        self._record(None)
        self._send(404, {"error": {"message": "no such route"}})

    monkeypatch.setattr(testing._Handler, "do_GET", do_get)


def test_endpoint_without_model_list_gets_one_token_chat(monkeypatch) -> None:
    _no_model_list(monkeypatch)
    with FakeOpenAIServer() as server:
        assert "lists no models" in check_model(f"fake-model@{server.base_url}")
        [req] = server.chat_requests
        assert req.body["max_tokens"] == 1
        server.fail_next(1, status=500)
        t0 = time.monotonic()
        with pytest.raises(ModelUnavailableError, match="500"):
            check_model(f"fake-model@{server.base_url}")
        assert time.monotonic() - t0 < 5 and len(server.chat_requests) == 2  # no retry loop


def test_hanging_endpoint_is_cut_at_the_check_timeout(monkeypatch) -> None:
    _no_model_list(monkeypatch)
    monkeypatch.setattr("veriforge.llm.factory.CHECK_TIMEOUT_S", 1.0)
    with FakeOpenAIServer() as server:
        server.hang_next(1, seconds=20)
        t0 = time.monotonic()
        with pytest.raises(ModelUnavailableError, match="no answer within 1 s"):
            check_model(f"fake-model@{server.base_url}")
        assert time.monotonic() - t0 < 6


def test_missing_local_model_is_reported(tmp_path) -> None:
    with pytest.raises(ModelUnavailableError, match="not found"):
        check_model(f"hf:{tmp_path / 'nope'}")
    assert check_model(None) is None


def test_out_dir_checks(tmp_path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(OutputLocationError, match="is an existing file"):
        check_out_dir(afile)
    with pytest.raises(OutputLocationError, match="is a file, not a folder"):
        check_out_dir(afile / "sub")
    with pytest.raises(OutputLocationError, match="cannot be created"):
        check_out_dir(__import__("pathlib").Path("/proc/veriforge-out"))
    made = check_out_dir(tmp_path / "a" / "b")
    assert made.is_dir() and not list(made.iterdir())  # the write probe is gone
    with pytest.raises(OutputLocationError, match="is a folder"):
        check_out_file(tmp_path / "a")
    assert check_out_file(tmp_path / "c" / "x.jsonl").parent.is_dir()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_unwritable_out_dir(tmp_path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(OutputLocationError, match="not writable"):
            check_out_dir(ro)
    finally:
        ro.chmod(0o755)


_HOLDER = """
import sys, time
from pathlib import Path
from veriforge.cli.preflight import OutputLock
lock = OutputLock(Path(sys.argv[1]), command="veriforge test-holder", run_id="run-A",
                  is_file=sys.argv[2] == "file").acquire()
print("locked", flush=True)
sys.stdin.readline()
lock.release()
"""


@pytest.mark.parametrize("kind", ["dir", "file"])
def test_second_run_into_the_same_out_is_refused_naming_the_holder(tmp_path, kind) -> None:
    target = tmp_path / ("out" if kind == "dir" else "pairs.jsonl")
    if kind == "dir":
        target.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(target), kind], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(OutputLockedError) as err:
            prepare_out(target, command="veriforge second", is_file=kind == "file")
        text = str(err.value)
        assert f"pid {holder.pid}" in text and "run run-A" in text and "veriforge test-holder" in text
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
    # released: the next run takes it, records itself, and removes the lock file when done
    with prepare_out(target, command="veriforge third", run_id="run-C", is_file=kind == "file") as lock:
        info = json.loads(lock.path.read_text())
        assert info["pid"] == os.getpid() and info["run_id"] == "run-C"
    assert not lock.path.exists()


def test_lock_of_a_dead_holder_is_free(tmp_path) -> None:
    """The kernel drops a flock when its process dies: a killed run never blocks the next one."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(tmp_path), "dir"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    holder.kill()
    holder.wait(timeout=30)
    assert (tmp_path / LOCK_NAME).exists()  # left behind by the killed holder...
    with OutputLock(tmp_path, command="next"):  # ...and still free
        pass
