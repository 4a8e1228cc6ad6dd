"""Unseen work is never priced at zero: a configuration whose launch the analysis cannot count gets an
unknown estimated time (with the reasons and a lower bound), no ``time_s`` measurement, and the
candidate no estimated score. Real C→CUDA candidates through the harness (g++ build, CPU runtime)."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from veriforge.cli.eval_cmd import eval_cmd
from veriforge.cuda.evaluate.harness import evaluate
from veriforge.optiml.objective import composite_objective, no_score_reason

# Large inputs (n > 100000: vector_add's 'large' config only) run a kernel whose loop sits under a
# loop whose trip count is read from memory (always 1): no static reading can count that loop's work.
SPLIT = r'''
#include <cuda_runtime.h>
__global__ void add_plain(const float* a, const float* b, float* c, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i] + b[i];
}
__global__ void add_wrapped(const float* a, const float* b, float* c, int n) {
    for (int r = 0; r < (int)a[0] * 0 + 1; ++r) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i] + b[i];
    }
}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    int blocks = (n + 255) / 256;
    if (blocks > 1024) blocks = 1024;
    if (n > 100000) add_wrapped<<<blocks, 256>>>(a, b, c, n);
    else add_plain<<<blocks, 256>>>(a, b, c, n);
}
'''
PLAIN = SPLIT.replace("add_wrapped<<<", "add_plain<<<")
CONFIGS = ["small", "odd", "large"]
ALL = [*CONFIGS, "t_large"]  # vector_add's [[timing]] configuration is estimated too (n > 100000: unknown)


@pytest.fixture(scope="module")
def results():
    split = evaluate("vector_add", SPLIT)
    plain = evaluate("vector_add", PLAIN)
    return split, plain


def test_unknown_config_has_no_time_but_the_reason_and_a_lower_bound(results) -> None:
    split, _ = results
    assert split.verdict.correct, split.verdict.reason
    est = split.details["estimate"]
    json.dumps(est)  # JSON-able as stored
    assert est["complete"] is False and est["status"] == "unknown"
    assert est["config_names"] == ALL and set(est["configs"]) == set(ALL) and est["timing"] == ["t_large"]
    large = est["configs"]["large"]
    assert large["time_s"] is None and large["status"] == "unknown"
    assert large["lower_bound_s"] > 0
    assert large["unknown"] and all(u.startswith("add_wrapped<<<1024, 256>>>") for u in large["unknown"])
    assert any("(int)a[0] * 0 + 1" in u for u in large["unknown"])
    for name in ("small", "odd"):
        assert est["configs"][name]["time_s"] > 0 and est["configs"][name]["status"] in ("exact", "upper_bound")
    # no estimated time_s for 'large'; each estimated time lists every configuration
    times = [m for m in split.measurements if m.provenance == "estimated" and m.name == "time_s"]
    assert sorted(m.details["config"] for m in times) == ["odd", "small"]
    assert all(m.details["configs"] == ALL for m in times)
    bound = [m for m in split.measurements if m.name == "time_s_lower_bound"]
    assert [m.details["config"] for m in bound] == ["large", "t_large"] and bound[0].value == large["lower_bound_s"]
    assert split.time("estimated") is None  # the last (largest) config has none: not odd's time instead
    assert split.time("estimated", "odd") > 0
    assert any("'large'" in n and "(int)a[0] * 0 + 1" in n for n in split.details["estimate_notes"])


def test_unknown_config_leaves_the_candidate_without_a_score(results) -> None:
    split, plain = results
    configs = [r.config for r in split.verdict.results]
    assert composite_objective(split.measurements, split.features, "estimated", configs=configs,
                               estimate=split.details["estimate"]) is None
    why = no_score_reason(split.measurements, "estimated", configs, split.details["estimate"])
    assert why.startswith("config 'large': estimate unknown:") and "(int)a[0] * 0 + 1" in why
    # the same candidate without the wrapper: a number on every configuration, and a score
    assert plain.verdict.correct and plain.details["estimate"]["complete"] is True
    assert all(plain.time("estimated", c) > 0 for c in CONFIGS)
    obj = composite_objective(plain.measurements, plain.features, "estimated",
                              configs=[r.config for r in plain.verdict.results],
                              estimate=plain.details["estimate"])
    assert obj is not None and set(obj.config_times) == set(ALL)  # the timing size counts for OptiML too


def test_eval_cli_prints_each_config_status_and_reasons(results, monkeypatch, tmp_path) -> None:
    split, plain = results
    cand = tmp_path / "cand.cu"
    cand.write_text(SPLIT)
    app = typer.Typer()
    app.command("eval")(eval_cmd)
    app.command("noop")(lambda: None)
    monkeypatch.setattr("veriforge.cuda.evaluate.harness.evaluate", lambda *a, **k: split)
    res = CliRunner().invoke(app, ["eval", "vector_add", str(cand)])
    assert res.exit_code == 0, res.output
    assert "no estimated score: unknown on large" in res.output
    assert "time[large] = unknown — lower bound" in res.output
    assert "unknown: add_wrapped<<<1024, 256>>>" in res.output and "(int)a[0] * 0 + 1" in res.output
    assert "time[odd] =" in res.output
    assert "(estimated for H100-SXM, exact" in res.output or "(estimated for H100-SXM, upper_bound" in res.output
    monkeypatch.setattr("veriforge.cuda.evaluate.harness.evaluate", lambda *a, **k: plain)
    res = CliRunner().invoke(app, ["eval", "vector_add", str(cand)])
    assert res.exit_code == 0 and "no estimated score" not in res.output and "unknown" not in res.output


def test_torch2cuda_estimate_is_unknown_for_a_wrapped_loop(tmp_path) -> None:
    from veriforge.cuda.evaluate.estimate import estimate_torch_configs, estimate_torch_impl
    from veriforge.cuda.tasks import bundled_tasks, load_task

    spec = load_task(next(f for f in bundled_tasks("torch2cuda") if f.name == "rmsnorm"))
    text = (spec.folder / "impls" / "naive.py").read_text()
    loop = "for (int c = 0; c < cols; ++c) sq += in[c] * in[c];"
    assert loop in text
    impl = tmp_path / "wrapped.py"
    impl.write_text(text.replace(loop, "for (int r = 0; r < (int)w[0] * 0 + 1; ++r) { " + loop + " }"))
    times, notes, _ = estimate_torch_impl(spec, impl)
    assert times == {} and len(notes) == len(spec.configs) + len(spec.timing)
    assert all("(int)w[0] * 0 + 1" in n for n in notes)
    est = estimate_torch_configs(spec, impl)
    assert not est.complete and all(c.status == "unknown" and c.lower_bound_s for c in est.configs.values())
    ms = est.measurements()
    assert ms and {m.name for m in ms} == {"time_s_lower_bound"}


def test_harness_estimates_torch2cuda_candidates_on_every_config() -> None:
    """The CPU back-end prices PyTorch→CUDA candidates like C→CUDA ones (before, they had no estimated
    time, so every reward and objective saw an unknown speed)."""
    from veriforge.cuda.evaluate.harness import resolve_task

    spec = resolve_task("torch2cuda/gelu_tanh")
    res = evaluate(spec, spec.folder / spec.implementations[0].file)
    assert res.correct
    times = {m.details["config"]: m.value for m in res.measurements
             if m.name == "time_s" and m.provenance == "estimated"}
    assert set(times) == {c.name for c in (*spec.configs, *spec.timing)} and all(t > 0 for t in times.values())
    assert res.details["estimate"]["complete"] is True
