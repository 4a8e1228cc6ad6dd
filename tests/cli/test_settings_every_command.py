"""``--config``/``--set`` reach every command (issue 19, part 5).

Each command group gets one override that must change what the command *does*, observed through
the command's own output or files (not just that the value parses): the search budget of
``optimize``, the run store ``eval`` caches into, the program time limit of ``cuda run``, the GPU
of ``cuda analyze``, the model ``generate``/``d3gym``/``cudaperf`` use, and so on. A bad key fails
every command the same way, before any work; ``--help`` never depends on the settings.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veriforge.cli.main import app
from veriforge.core import defaults
from veriforge.core.config import Settings, active_settings
from veriforge.cuda.tasks import find_task

runner = CliRunner()


def _invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_settings_are_active_only_while_a_command_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = _invoke("--set", "optiml.budget=7", "config", "show", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["optiml"]["budget"] == 7
    # After the command the overrides are gone (no leak into the next command or the caller).
    assert active_settings().optiml.budget == defaults.OPTIML_BUDGET


def test_one_default_per_option():
    """The settings' defaults are the constants the CLI help quotes and the library uses."""
    from veriforge.optiml.xsearch import XSearchSettings
    from veriforge.search.config import SearchConfig

    s, x = Settings(), XSearchSettings()
    assert s.optiml.budget == x.max_evaluations == SearchConfig().max_evaluations == defaults.OPTIML_BUDGET
    assert s.optiml.algorithm == x.algorithm and s.optiml.seed == x.seed
    assert s.cuda.gpu == x.gpu == defaults.CUDA_GPU and s.cuda.backend == x.backend
    help_text = _invoke("optimize", "--help").output
    assert "setting optiml.budget" in " ".join(help_text.split())


@pytest.mark.parametrize("argv", [
    ["tasks", "list"], ["eval", "vector_add", "x.cu"], ["optimize"], ["d3gym", "validate", "."],
    ["cuda", "run", "x.cu"], ["cudaperf", "dataset", "families"], ["moa", "ask", "q"], ["doctor"],
])
def test_a_bad_setting_stops_every_command_before_it_starts(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["--set", "optiml.budgt=3", *argv])
    assert res.exit_code != 0
    assert "optiml.budgt" in str(res.exception)
    # ... while --help still works with the same broken setting.
    assert runner.invoke(app, ["--set", "optiml.budgt=3", *argv[:2], "--help"]).exit_code == 0


def test_optimize_budget_from_settings_even_for_the_demo(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store" / "runs.sqlite"
    res = _invoke("--set", "optiml.budget=2", "--set", f"store.path={store}", "optimize", "-q",
                  "--out", str(tmp_path / "out"))
    assert res.exit_code == 0, res.output
    tree = json.loads((tmp_path / "out" / "tree.json").read_text())
    assert len(tree["nodes"]) == 2  # the demo's own budget is 20; the setting wins
    assert "2 kernels evaluated" in res.output
    assert store.is_file()  # the run went to the configured store


def test_optimize_resolves_the_ambiguous_readme_id_to_the_cu_task(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = _invoke("optimize", "gemv", "--budget", "1", "-q", "--out", "out", "--time-limit", "60")
    assert res.exit_code == 0, res.output
    assert "using c2cuda/gemv" in " ".join(res.output.split())
    assert json.loads(Path("out/tree.json").read_text())["task"] in ("gemv", "c2cuda/gemv")


def test_eval_uses_the_configured_run_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cand = find_task("c2cuda/vector_add") / "impls" / "naive.cu"
    store = tmp_path / "mine.sqlite"
    first = _invoke("--set", f"store.path={store}", "eval", "c2cuda/vector_add", str(cand))
    assert first.exit_code == 0, first.output
    assert store.is_file() and "(cached)" not in first.output
    again = _invoke("--set", f"store.path={store}", "eval", "c2cuda/vector_add", str(cand))
    assert "(cached)" in again.output  # read back from that store


@pytest.fixture
def reachable_dir(monkeypatch):
    """A current directory the sandbox user can reach (a program runs in it)."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="vf-settings-"))
    path.chmod(0o755)
    monkeypatch.chdir(path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_cuda_run_time_limit_from_settings(reachable_dir):
    Path("spin.cu").write_text("int main() { volatile int x = 0; for (;;) x++; }\n")
    res = runner.invoke(app, ["--set", "cuda.program_timeout_s=1", "cuda", "run", "spin.cu"])
    assert res.exit_code == 124, res.output
    assert "past its 1 s limit" in res.output  # the configured limit, not the default 60 s


def test_cuda_analyze_gpu_from_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("k.cu").write_text("__global__ void scale(float* x, int n) {\n"
                            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] *= 2.0f;\n}\n")
    args = ["cuda", "analyze", "k.cu", "--kernel", "scale", "--grid", "64", "--block", "256",
            "--param", "n=16384", "--no-nvcc", "--json"]
    res = _invoke("--set", "cuda.gpu=A100-SXM4-80GB", *args)
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["estimate"]["gpu"] == "A100-SXM4-80GB"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_cuda_compile_arch_from_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("k.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n")
    res = _invoke("--set", "cuda.arch=sm_80", "cuda", "compile", "k.cu", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["arch"] == "sm_80"


def _missing_script(tmp_path: Path) -> str:
    return f"scripted:{tmp_path / 'no-such-replies.jsonl'}"


def test_generate_takes_the_model_from_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["--set", f"llm.model={_missing_script(tmp_path)}", "generate", "vector_add",
                              "--no-optimize"])
    assert res.exit_code == 2
    assert "no-such-replies.jsonl" in res.output  # that model, not "needs a language model"


def test_d3gym_build_takes_the_model_from_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "repo").mkdir()
    res = runner.invoke(app, ["--set", f"llm.model={_missing_script(tmp_path)}", "d3gym", "build", "repo",
                              "--out", "tasks", "--env-mode", "reuse"])
    assert res.exit_code == 2
    assert "no-such-replies.jsonl" in res.output


def test_cudaperf_refine_takes_the_model_from_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["cudaperf", "refine", "c2cuda/vector_add", "--turns", "1"])
    assert res.exit_code == 2 and "no model" in res.output
    res = runner.invoke(app, ["--set", f"llm.model={_missing_script(tmp_path)}", "cudaperf", "refine",
                              "c2cuda/vector_add", "--turns", "1"])
    assert res.exit_code == 2
    assert "no-such-replies.jsonl" in res.output


def test_moa_takes_the_model_from_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    replies = tmp_path / "r.jsonl"
    replies.write_text('"The answer is 180 km. #### 180"\n')
    res = runner.invoke(app, ["--set", f"llm.model=scripted:{replies}", "moa", "ask", "60 km/h for 3 h?",
                              "--json"])
    assert res.exit_code == 0, res.output
    assert "180" in res.output


def test_doctor_reports_the_configured_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    replies = tmp_path / "r.jsonl"
    replies.write_text('"hi"\n')
    res = _invoke("--set", f"llm.model=scripted:{replies}", "doctor", "--json")
    assert res.exit_code == 0, res.output
    assert str(replies) in res.output


def test_sandbox_timeout_bounds_a_candidate_evaluation(tmp_path, monkeypatch):
    """`sandbox.timeout_s` is the base limit of one evaluation (plus at most the base per case): a
    hanging candidate is stopped after seconds, not the default minute."""
    from veriforge.core.config import load_settings
    from veriforge.cuda.tasks.load import find_task

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VERIFORGE_STORE__PATH", str(tmp_path / "runs.sqlite"))
    src = (find_task("c2cuda/vector_add") / "impls" / "naive.cu").read_text()
    spin = "    volatile int spin_ = 1; while (spin_) { }\n"
    Path("spin.cu").write_text(src.replace("    const int threads = 256;", spin + "    const int threads = 256;"))
    res = _invoke("--set", "sandbox.timeout_s=1", "eval", "c2cuda/vector_add", "spin.cu")
    assert res.exit_code == 1, res.output
    # vector_add's 3 configurations x 2 trials = 6 cases: 1 s + 6 x 1 s (default: 60 s + 6 x 10 s); a
    # hang is a hang at 1 s as at 10 s, so the smallest limit keeps the wait short
    assert "did not finish within 7 s" in res.output, res.output
    assert load_settings().sandbox.timeout_s == 60.0  # the override lived only for that command


def test_sandbox_limits_bound_candidate_evaluations_and_key_the_cache(tmp_path, monkeypatch):
    """Other `sandbox.*` settings tighten the back-end's own limits: with `sandbox.cpu_s=2` a
    spinning candidate is killed for CPU time (SIGXCPU), not at its 74 s wall limit; a correct candidate
    still passes, and under the default settings it is a different cache entry."""
    from veriforge.core.config import load_settings
    from veriforge.cuda.evaluate.configured import tighten
    from veriforge.cuda.tasks.load import find_task
    from veriforge.sandbox import Limits, Policy

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VERIFORGE_STORE__PATH", str(tmp_path / "runs.sqlite"))
    src = (find_task("c2cuda/vector_add") / "impls" / "naive.cu").read_text()
    spin = "    volatile int spin_ = 1; while (spin_) { }\n"
    Path("spin.cu").write_text(src.replace("    const int threads = 256;", spin + "    const int threads = 256;"))
    Path("ok.cu").write_text(src)
    res = _invoke("--set", "sandbox.cpu_s=2", "eval", "c2cuda/vector_add", "spin.cu")
    assert res.exit_code == 1 and "SIGXCPU" in res.output, res.output  # not the 74 s wall limit
    res = _invoke("--set", "sandbox.cpu_s=30", "eval", "c2cuda/vector_add", "ok.cu")
    assert res.exit_code == 0 and "cached" not in res.output.lower(), res.output
    res = _invoke("eval", "c2cuda/vector_add", "ok.cu")  # default limits: not that cached result
    assert res.exit_code == 0 and "cached" not in res.output.lower(), res.output
    # upper bounds only, and no address-space limit for a GPU process (the driver needs the space)
    monkeypatch.setenv("VERIFORGE_SANDBOX__MEMORY_MB", "1024")
    monkeypatch.setenv("VERIFORGE_SANDBOX__MAX_PROCS", "100000")
    from veriforge.core import config

    monkeypatch.setattr(config, "_ACTIVE", None, raising=False)
    base = Policy(limits=Limits(memory_mb=65536, max_procs=256))
    cpu, gpu = tighten(base, gpu=False), tighten(Policy(limits=Limits(memory_mb=None, max_procs=256)), gpu=True)
    assert (cpu.limits.memory_mb, cpu.limits.max_procs) == (1024, 256)
    assert (gpu.limits.memory_mb, gpu.limits.max_procs) == (None, 256)
    assert load_settings().sandbox.cpu_s == 60
