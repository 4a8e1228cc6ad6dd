"""``moa bench`` is resumable and failure-tolerant, over real HTTP (issue 17 part 2).

A benchmark process is SIGKILLed in the middle of a ReM-MoA item while the local OpenAI-compatible
server holds its requests; running the same command again finishes the grid with exactly as many
answered requests as an uninterrupted run and the same results. One failing item is that item's
error (exit code 1), not the grid's, and only it is asked again on the next run.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

import veriforge
from veriforge.cli.moa_cmd import app
from veriforge.core.store import RunStore
from veriforge.llm.testing import FakeOpenAIServer
from veriforge.moa.errors import MoAConfigError
from veriforge.moa.scaling import NS_BENCH_ITEM

REM_LAYER = "Below are reasoning traces from other agents"  # only a ReM-MoA layer >= 1 proposer prompt has it
TIMING = {"seconds", "item_seconds", "time"}
# Both runs name the bench: the default id digests the config, which holds each server's own port.
GRID = ("single,self_consistency,moa,rem_moa", "--run-id", "grid-1")


class Script:
    """Deterministic replies (from the request body alone), a count of answered requests, and a gate:
    once ``gate`` requests were answered, every further request is held until ``release`` is set."""

    def __init__(self, gate: int | None = None) -> None:
        self.gate = gate
        self.answered = 0
        self.bodies: list[dict] = []
        self.reached = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, body: dict, index: int) -> str:
        if index == 0:
            with self.lock:
                held = self.gate is not None and self.answered >= self.gate
                if not held:
                    self.answered += 1
                    self.bodies.append(body)
            if held:
                self.reached.set()
                self.release.wait(30)
                raise RuntimeError("held request released after the client died")
        last = body["messages"][-1]["content"]
        if "[Response A]" in last:
            a = last.split("[Response A]\n", 1)[1].split("\n\n[Response B]", 1)[0]
            b = last.split("[Response B]\n", 1)[1].split("\n\nWhich response", 1)[0]
            return "Compared.\n[[A]]" if len(a) % 3 >= len(b) % 3 else "Compared.\n[[B]]"
        seed = int(body.get("seed") or 0)
        return f"Worked through it (seed {seed % 1000}, sample {index}).\n#### {seed % 5 + index % 2}"


def _write_config(tmp: Path, url: str) -> Path:
    cfg = tmp / "moa.toml"
    cfg.write_text(f'method = "rem_moa"\n\n[[proposers]]\nmodel = "fake-model@{url}"\n\n'
                   '[reviewer]\nbudget = "all_pairs"\n')
    return cfg


def _args(cfg: Path, out: Path, methods: str = "single,self_consistency,moa,rem_moa", *extra: str) -> list[str]:
    return ["bench", "--suite", "gsm8k", "--limit", "3", "--depth", "1..2", "--width", "2", "--methods", methods,
            "--config", str(cfg), "--out", str(out), "--concurrency", "1", "--no-plots", *extra]


def _results(out: Path) -> tuple[list[dict], list[dict]]:
    """The csv rows and the json cells without timing fields (they differ from run to run)."""
    rows = [{k: v for k, v in r.items() if k not in TIMING} for r in csv.DictReader((out / "results.csv").open())]
    cells = json.loads((out / "results.json").read_text())["cells"]
    clean = [{k: ([{f: x for f, x in i.items() if f not in TIMING} for i in v] if k == "items" else v)
              for k, v in c.items() if k not in TIMING} for c in cells]
    return rows, clean


def test_killed_bench_resumes_without_repeating_requests(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # 1. the uninterrupted run, in its own home (its own run store)
    monkeypatch.setenv("VERIFORGE_HOME", str(tmp_path / "home-full"))
    full = Script()
    with FakeOpenAIServer(replies=full) as server:
        cfg = _write_config(tmp_path, server.base_url)
        result = CliRunner().invoke(app, _args(cfg, tmp_path / "full", *GRID))
        assert result.exit_code == 0, result.output
        assert "bench id: grid-1" in result.output and "--run-id grid-1" in result.output
    total = full.answered
    # hold the first layer-1 request of the second ReM-MoA depth-2 item: everything before it is answered
    rem_layer1 = [k for k, b in enumerate(full.bodies) if REM_LAYER in b["messages"][-1]["content"]]
    questions = [full.bodies[k]["messages"][-1]["content"].split("\n\n")[0] for k in rem_layer1]
    gate = next(k for k, q in zip(rem_layer1, questions, strict=True) if q != questions[0])
    assert 0 < gate < total

    # 2. the same command in a subprocess, SIGKILLed while the server holds its requests
    monkeypatch.setenv("VERIFORGE_HOME", str(tmp_path / "home-resume"))
    script = Script(gate=gate)
    with FakeOpenAIServer(replies=script) as server:
        cfg = _write_config(tmp_path, server.base_url)
        env = {**os.environ, "PYTHONPATH": str(Path(veriforge.__file__).resolve().parents[1])}
        proc = subprocess.Popen([sys.executable, "-m", "veriforge", "moa", *_args(cfg, tmp_path / "resumed", *GRID)],
                                env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert script.reached.wait(60), proc.communicate(timeout=5)
        finally:
            proc.send_signal(signal.SIGKILL)
            _, err = proc.communicate(timeout=30)
            script.release.set()
        assert proc.returncode == -signal.SIGKILL
        assert script.answered == gate
        # results were written as cells finished: the six cells before ReM-MoA depth 2 are there
        rows, _ = _results(tmp_path / "resumed")
        assert [(r["method"], r["depth"]) for r in rows][-1] == ("rem_moa", "1") and len(rows) == 6
        progress = [json.loads(x) for x in (tmp_path / "resumed" / "progress.jsonl").read_text().splitlines()]
        assert sum(p["event"] == "item" for p in progress) == 6 * 3 + 1  # the first rem_moa d=2 item too
        assert b"rem_moa d=2 w=2" in err  # a progress line per item on stderr (not a TTY)

        # 3. the same command again: only what was not answered is requested
        script.gate = None
        result = CliRunner().invoke(app, _args(cfg, tmp_path / "resumed", *GRID))
        assert result.exit_code == 0, result.output
    assert script.answered == total  # not one finished request repeated
    assert _results(tmp_path / "resumed") == _results(tmp_path / "full")
    # the interrupted item resumed from its stored layers (same run id, one resume)
    store = RunStore(tmp_path / "home-resume" / "runs.sqlite")
    resumed = [r for r in store.list_runs(kind="moa") if r.resumes]
    assert len(resumed) == 1 and resumed[0].id.endswith("/rem_moa-d2-w2/" + resumed[0].id.rsplit("/", 1)[1])
    assert len(store.records(NS_BENCH_ITEM)) == 7 * 3

    # 4. once finished, a rerun asks for nothing and rewrites the same results
    with FakeOpenAIServer(replies=script) as server:
        before = script.answered
        result = CliRunner().invoke(app, _args(cfg, tmp_path / "resumed", *GRID))
        assert result.exit_code == 0, result.output
        assert script.answered == before and not server.chat_requests
    assert _results(tmp_path / "resumed") == _results(tmp_path / "full")


def test_a_failing_item_is_its_own_error_and_is_retried(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = Script()
    with FakeOpenAIServer(replies=script) as server:
        cfg = _write_config(tmp_path, server.base_url)
        args = _args(cfg, tmp_path / "out", "single,self_consistency", "--depth", "1")
        server.fail_next(1, status=400)  # not retryable: the first item's only request fails
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 1, result.output
        bench_id = result.output.split("bench id: ", 1)[1].split()[0]
        assert bench_id.startswith("bench-gsm8k-")  # derived: rerunning the same command resumes it
        assert "1 item(s) failed" in result.output and "single d=1 w=1" in result.output
        rows = list(csv.DictReader((tmp_path / "out" / "results.csv").open()))
        assert [(r["method"], r["n"], r["errors"]) for r in rows] == [("single", "3", "1"),
                                                                     ("self_consistency", "3", "0")]
        items = json.loads((tmp_path / "out" / "results.json").read_text())["cells"][0]["items"]
        failed = [i for i in items if i["error"]]
        assert len(failed) == 1 and "400" in failed[0]["error"] and "\n" not in failed[0]["error"]
        assert not failed[0]["correct"]
        first_run = len(server.chat_requests)
        assert first_run == 3 + 3

        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        assert f"bench id: {bench_id}" in result.output
        assert len(server.chat_requests) == first_run + 1  # only the failed item is asked again
        rows = list(csv.DictReader((tmp_path / "out" / "results.csv").open()))
        assert [r["errors"] for r in rows] == ["0", "0"] and rows[0]["requests_per_item"] == "1.0"



async def test_scoring_failure_keeps_the_answer_and_a_lost_record_gets_a_fresh_run(tmp_path):
    """Orchestration with scripted agents and a real run store: a scorer that fails (a sandbox error)
    makes that item's error without discarding the engine's answer, so the rerun only scores it; and a
    run that finished without its record (killed in between) is answered again under ``<id>~2``."""
    from veriforge.errors import SandboxError
    from veriforge.moa.scaling import run_grid
    from veriforge.moa.simulate import SimItem, SimWorld, sim_config

    world = SimWorld(seed=5)
    clients = world.clients()
    items = world.items(3)
    broken = {"q1"}

    def score(item, text):
        if item.id in broken:
            raise SandboxError("sandbox unavailable")
        return world.score(item, text)

    def calls() -> int:
        return sum(c.totals.calls for c in clients.values())

    store = RunStore(tmp_path / "runs.sqlite")
    grid = {"methods": ["moa"], "depths": [2], "widths": [2], "score": score, "engine_options": {"clients": clients},
            "store": store, "bench_id": "b1"}
    first = (await run_grid(items, sim_config("moa", 1, 2), **grid))[0]
    assert first.errors == 1 and "SandboxError: sandbox unavailable" in first.items[1].error
    assert first.items[1].calls == 2 * 2 + 1 and first.items[1].tokens > 0  # its spend is still reported
    spent = calls()
    broken.clear()
    second = (await run_grid(items, sim_config("moa", 1, 2), **grid))[0]
    assert calls() == spent and second.errors == 0 and second.reused == 2  # scored, not asked again
    assert [i.answer for i in second.items] == [i.answer for i in first.items[:1]] + [
        second.items[1].answer] + [first.items[2].answer]

    store.delete_record(NS_BENCH_ITEM, "b1/moa-d2-w2/q0")  # as if killed between the run's end and its record
    third = (await run_grid(items, sim_config("moa", 1, 2), **grid))[0]
    assert calls() == spent + 2 * 2 + 1  # q0 alone, once more
    assert third.items[0].run_id == "b1/moa-d2-w2/q0~2" and store.get_run("b1/moa-d2-w2/q0~2").status == "done"
    assert third.items[0].answer == first.items[0].answer  # deterministic agents: the same answer

    # the same bench id under another configuration is refused rather than mixed with these results
    with pytest.raises(MoAConfigError, match="another configuration"):
        await run_grid(items, sim_config("moa", 1, 2, seed=7), **grid)
    with pytest.raises(MoAConfigError, match="unique"):
        await run_grid([SimItem("q0", "a"), SimItem("q0", "b")], sim_config("moa", 1, 2), **grid)
