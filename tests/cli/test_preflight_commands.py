"""Every command that takes a model or an --out checks them before its work starts.

A new user's misconfigured model server or output path must cost seconds and one ``error:`` line
naming the endpoint or path, whichever command they ran: the real CLI entry point, real HTTP to a
closed port, real files and a real ``fcntl`` lock.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from veriforge.cli.main import main
from veriforge.cli.preflight import OutputLock
from veriforge.cli.progress import interrupted


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _model_argv(tmp: Path, url: str) -> dict[str, list[str]]:
    (tmp / "repo").mkdir(exist_ok=True)
    (tmp / "tasks").mkdir(exist_ok=True)
    return {
        "generate": ["generate", "c2cuda/vector_add", "--model", f"vllm:Qwen/Q@{url}", "--out", str(tmp / "o1")],
        "moa ask": ["moa", "ask", "What is 2 + 2?", "--model", f"vllm:Qwen/Q@{url}", "--method", "single"],
        "moa bench": ["moa", "bench", "--suite", "gsm8k", "--out", str(tmp / "o2"), "--model", f"vllm:Qwen/Q@{url}",
                      "--limit", "1", "--methods", "single", "--depth", "1", "--width", "1"],
        "cudaperf refine": ["cudaperf", "refine", "c2cuda/vector_add", "--model", f"vllm:Qwen/Q@{url}",
                            "--out", str(tmp / "o3")],
        "d3gym build": ["d3gym", "build", str(tmp / "repo"), "--out", str(tmp / "o4"), "--model",
                        f"vllm:Qwen/Q@{url}"],
        "d3gym run": ["d3gym", "run", str(tmp / "tasks"), "--model", f"vllm:Qwen/Q@{url}", "--out",
                      str(tmp / "o5")],
    }


@pytest.mark.parametrize("command", ["generate", "moa ask", "moa bench", "cudaperf refine", "d3gym build",
                                     "d3gym run"])
def test_model_without_server_fails_in_seconds(tmp_path, capsys, command) -> None:
    port = _closed_port()
    url = f"http://127.0.0.1:{port}/v1"
    t0 = time.monotonic()
    code = main(_model_argv(tmp_path, url)[command])
    cap = capsys.readouterr()
    assert code == 2, cap.out + cap.err
    assert time.monotonic() - t0 < 20
    [line] = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert line.startswith("error: model vllm:Qwen/Q@") and url in line and "does not answer" in line
    assert "Traceback" not in cap.out + cap.err
    # nothing was written: the folders made for the run are gone again
    assert not any(p.name.startswith("o") for p in tmp_path.iterdir()), list(tmp_path.iterdir())


def _out_argv(out: Path) -> dict[str, list[str]]:
    return {
        "generate": ["generate", "c2cuda/vector_add", "--model", "scripted:none.jsonl", "--out", str(out)],
        "moa bench": ["moa", "bench", "--suite", "gsm8k", "--out", str(out), "--model", "scripted:none.jsonl",
                      "--limit", "1", "--methods", "single", "--depth", "1", "--width", "1"],
        "cudaperf dataset build": ["cudaperf", "dataset", "build", "--out", str(out), "--families", "toy_relu"],
        "cudaperf refine": ["cudaperf", "refine", "c2cuda/vector_add", "--model", "scripted:none.jsonl",
                            "--out", str(out)],
    }


@pytest.mark.parametrize("command", ["generate", "moa bench", "cudaperf dataset build", "cudaperf refine"])
def test_out_naming_a_file_fails_before_the_work(tmp_path, capsys, command) -> None:
    afile = tmp_path / "afile"
    afile.write_text("mine")
    code = main(_out_argv(afile)[command])
    cap = capsys.readouterr()
    assert code == 2, cap.out + cap.err
    assert f"error: --out {afile} is an existing file, not a folder" in cap.err
    assert "Traceback" not in cap.out + cap.err and afile.read_text() == "mine"


def test_pairs_out_naming_a_folder_fails_before_evaluating(tmp_path, capsys) -> None:
    t0 = time.monotonic()
    code = main(["cudaperf", "rank", "pairs", "--out", str(tmp_path), "--tasks", "c2cuda/vector_add"])
    cap = capsys.readouterr()
    assert code == 2 and time.monotonic() - t0 < 10
    assert f"error: --out {tmp_path} is a folder; name a file" in cap.err
    assert "vector_add:" not in cap.err  # no task was evaluated


@pytest.mark.parametrize("command", ["moa bench", "cudaperf refine"])
def test_locked_out_is_refused_naming_the_holder(tmp_path, capsys, command) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with OutputLock(out, command="veriforge other", run_id="run-held"):
        code = main(_out_argv(out)[command])
    cap = capsys.readouterr()
    assert code == 2, cap.out + cap.err
    assert f"--out {out} is in use by another veriforge run" in cap.err and "run run-held" in cap.err


def test_refine_resume_hint_uses_its_resume_option() -> None:
    argv = ["cudaperf", "refine", "t", "--model", "m", "--resume", "old"]
    line = interrupted("new", argv, kept="finished turns are in the run store", option="--resume")
    assert line.endswith("resume with: veriforge cudaperf refine t --model m --resume new")
