"""`veriforge optimize` checks its model and output before the search, and counts model failures.

Real HTTP to :class:`FakeOpenAIServer` (or a closed port), the real CLI entry point, a real run
store: what a user with a misconfigured model server or output folder sees.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time

import pytest

from veriforge.cli.main import main
from veriforge.cli.preflight import OutputLock
from veriforge.llm.testing import FakeOpenAIServer

TASK = "c2cuda/vector_add"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_model_without_server_fails_in_seconds_before_the_search(tmp_path, capsys) -> None:
    port = _closed_port()
    out = tmp_path / "out"
    t0 = time.monotonic()
    code, stdout, stderr = _run(["optimize", TASK, "--budget", "3", "--out", str(out), "--quiet",
                                 "--model", f"vllm:Qwen/Qwen2.5-7B@http://127.0.0.1:{port}/v1"], capsys)
    assert code == 2
    assert time.monotonic() - t0 < 15
    [line] = [ln for ln in stderr.splitlines() if ln.strip()]
    assert line.startswith("error: model vllm:Qwen/Qwen2.5-7B") and f"127.0.0.1:{port}/v1" in line
    assert "Traceback" not in stderr + stdout
    assert not (out / "tree.json").exists()


def test_output_location_is_checked_before_the_search(tmp_path, capsys) -> None:
    afile = tmp_path / "afile"
    afile.write_text("mine")
    for target, words in ((afile, "is an existing file"), (afile / "sub", "is a file, not a folder")):
        t0 = time.monotonic()
        code, stdout, stderr = _run(["optimize", TASK, "--budget", "3", "--out", str(target), "--quiet"], capsys)
        assert code == 2 and time.monotonic() - t0 < 10
        assert stderr.strip().startswith("error: --out") and words in stderr, stderr
        assert "Traceback" not in stderr and "kernels evaluated" not in stdout
    assert afile.read_text() == "mine"


def test_second_run_into_a_locked_out_is_refused(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with OutputLock(out, command="veriforge optimize", run_id="run-first"):
        code, _, stderr = _run(["optimize", TASK, "--budget", "3", "--out", str(out), "--quiet"], capsys)
    assert code == 2
    assert "is in use by another veriforge run" in stderr and "run run-first" in stderr, stderr
    assert not (out / "tree.json").exists()


def _flaky_replies(fail_every: int):
    """Fail (HTTP 500) every ``fail_every``-th model call; answer the others without usable edits."""
    counter = itertools.count()
    lock = threading.Lock()

    def reply(body, i):
        with lock:
            k = next(counter)
        if k % fail_every == 0:
            raise RuntimeError(f"model call {k} broken on purpose")
        return "no edits here"

    return reply


@pytest.mark.parametrize("fail_every", [1, 2])
def test_model_failures_are_counted_in_summary_tree_and_report(tmp_path, capsys, monkeypatch,
                                                                fail_every) -> None:
    monkeypatch.setenv("VERIFORGE_LLM__MAX_RETRIES", "0")
    out = tmp_path / "out"
    with FakeOpenAIServer(replies=_flaky_replies(fail_every)) as server:
        code, stdout, stderr = _run(["optimize", TASK, "--budget", "6", "--out", str(out), "--quiet",
                                     "--model", f"fake-model@{server.base_url}"], capsys)
        real_calls = server.chat_requests
    tree = json.loads((out / "tree.json").read_text())
    calls = tree["model_calls"]
    assert calls["calls"] == len(real_calls) >= 2
    expected_failed = len(real_calls) if fail_every == 1 else (len(real_calls) + 1) // 2
    assert calls["failed"] == expected_failed
    assert "broken on purpose" in calls["first_error"]
    flat = " ".join(stdout.split())
    assert f"model calls: {calls['calls']} made, {expected_failed} failed" in flat, stdout
    report = (out / "report.html").read_text()
    assert f"{calls['calls']} made, {expected_failed} failed" in report
    if fail_every == 1:  # every call failed: outputs written, but never a silent exit 0
        assert calls["all_failed"] and code == 1
        [err] = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
        assert err.startswith("error: every model call failed") and "(run " in err
        assert "EVERY model call failed" in report
    else:
        assert not calls["all_failed"] and code == 0, stderr
