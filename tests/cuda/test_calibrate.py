"""calibrate_from_store: GPU timings in the run store -> fitted cost-model constants.

The stored records are made by the GPU back-end's own code (``timing_measurements`` turns the
timing driver's JSON into measurements; ``EvalResult.to_dict`` and ``evaluation_key`` are what the
harness stores), from times generated with known constants on bundled implementations, so the
fit must recover those constants.
"""

from __future__ import annotations

import json
import math

import pytest

from veriforge.core.store import RunStore
from veriforge.core.types import Candidate, InputResult, Verdict
from veriforge.cuda import costmodel
from veriforge.cuda.calibrate import (
    NoCalibrationDataError,
    calibrate_from_store,
    launch_reports,
    load_constants,
    save_constants,
)
from veriforge.cuda.costmodel import DEFAULT_CONSTANTS, CostConstants, CostModelError
from veriforge.cuda.evaluate.backend import TimingOptions
from veriforge.cuda.evaluate.gpu import timing_measurements
from veriforge.cuda.evaluate.harness import EVAL_KIND, evaluation_key, resolve_task
from veriforge.cuda.evaluate.result import EvalResult
from veriforge.cuda.tasks.generate import make_case

GPU = "H100-SXM"
DEVICE = "NVIDIA H100 80GB HBM3"  # what detect_gpu() reports; the back-end labels results gpu:<name>
TASKS = ("vector_add", "matmul_fp32", "jacobi_2d_5pt")
TRUE = DEFAULT_CONSTANTS.replace(dram_bw_fraction=0.62, fp32_fraction=0.48, mem_latency_ns=750.0,
                                 shared_wavefronts_per_clk=0.7, launch_overhead_s=4.1e-6)

TWO_KERNELS = """
__global__ void half_a(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i];
}
__global__ void half_b(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] += b[i];
}
void solve(const float* a, const float* b, float* c, int n) {
    half_a<<<(n + 255) / 256, 256>>>(a, b, c, n);
    half_b<<<(n + 127) / 128, 128>>>(a, b, c, n);
}
"""


def _true_time(spec, source: str, config: str, constants: CostConstants) -> float:
    case = make_case(spec, config, 0)
    scalars = {p.name: v for p, v in zip(spec.params, case.args, strict=True) if p.role == "scalar"}
    inputs = {p.name: v for p, v in zip(spec.params, case.args, strict=True) if p.role == "in"}
    times = [costmodel.estimate(rep, GPU, constants=constants).time_s
             for _, rep in launch_reports(source, spec.entry, scalars, GPU, inputs)]
    return None if None in times else sum(times)  # type: ignore[arg-type]


def _store_gpu_result(store: RunStore, spec, source: str, times: dict[str, float], *, device: str = DEVICE,
                      wall_extra_ms: float = 0.0, **overrides) -> str:
    """Store what the harness stores for a passed GPU evaluation with these per-config times."""
    cand = Candidate(source=source, language="cuda")
    timing = {"device": device, "cc": "9.0", "warmup": 3, "flush_bytes": 1 << 26,
              "configs": [{"config": name, "sets": 2,
                           "libs": [{"event_ms": [t * 1e3 * f for f in (0.99, 1.0, 1.0, 1.01, 1.0)],
                                     "wall_ms": [t * 1e3 + wall_extra_ms] * 5}]}
                          for name, t in times.items()]}
    result = EvalResult(verdict=Verdict.passed([InputResult(config=n, passed=True) for n in times]),
                        measurements=timing_measurements(timing, f"gpu:{device}", baseline=False),
                        task_id=spec.id, backend="gpu", candidate_hash=cand.hash)
    options = {"trials": 2, "seed": None, "configs": list(times), "memcheck": False, "estimate": True,
               "profile": False, "timing": TimingOptions()}
    result.key = evaluation_key(spec, cand, "gpu", options)
    data = result.to_dict()
    data.update(overrides)
    store.put_evaluation(result.key, data, kind=EVAL_KIND)
    return result.key


@pytest.fixture(scope="module")
def truth() -> list[tuple[object, str, dict[str, float]]]:
    """(task spec, implementation source, {config: true time}) for every bundled implementation."""
    out = []
    for tid in TASKS:
        spec = resolve_task(f"c2cuda/{tid}")
        for impl in spec.implementations:
            source = (spec.folder / impl.file).read_text()
            times = {c.name: _true_time(spec, source, c.name, TRUE) for c in spec.configs}
            assert None not in times.values(), (tid, impl.file)  # every bundled launch is countable
            out.append((spec, source, times))
    return out


@pytest.fixture
def store(tmp_path, truth) -> RunStore:
    s = RunStore(tmp_path / "runs.sqlite")
    for spec, source, times in truth:
        _store_gpu_result(s, spec, source, times)
    yield s
    s.close()


def test_recovers_known_constants(store, truth) -> None:
    rep = calibrate_from_store(store, GPU)
    assert rep.n_pairs == sum(len(t) for _, _, t in truth) == 27
    assert rep.skipped == []
    assert rep.fit_error.rms_log < 1e-3
    assert rep.default_rms_log > 0.1  # the defaults really were off, so the fit did something
    assert rep.fit_error.rms_log < rep.default_rms_log / 100
    # Every fitted constant comes back: the pairs mix launch-overhead-, DRAM-, FMA- and
    # shared-memory-dominated kernels, so each one moves some estimate.
    for name in rep.fit_error.params:
        assert getattr(rep.constants, name) == pytest.approx(getattr(TRUE, name), rel=0.01), name
    for p in rep.pairs:
        assert p.fitted_estimate_s == pytest.approx(p.measured_s, rel=5e-3)
        assert p.launches == 1
    assert {p.task_id for p in rep.pairs} == set(TASKS)


def test_fit_error_reports_noise(tmp_path, truth) -> None:
    """Measurements the model cannot reproduce exactly show up in the fit error, not silently."""
    with RunStore(tmp_path / "noisy.sqlite") as s:
        for i, (spec, source, times) in enumerate(truth):
            noisy = {c: t * (1.25 if (i + j) % 2 else 0.8) for j, (c, t) in enumerate(times.items())}
            _store_gpu_result(s, spec, source, noisy)
        rep = calibrate_from_store(s, GPU)
    assert 0.1 < rep.fit_error.rms_log < 0.3
    assert rep.fit_error.n == sum(len(t) for _, _, t in truth)


def test_skips_say_why(store, truth) -> None:
    spec, source, times = truth[0]
    other = resolve_task("c2cuda/vector_add")
    edits = {tag: source + f"\n// {tag}\n" for tag in ("no id", "H200", "side stream", "gone")}
    known = {Candidate(source=s, language="cuda").hash: s for s in edits.values()}
    _store_gpu_result(store, spec, edits["no id"], times, task_id="")
    _store_gpu_result(store, spec, source + "\n// unseen edit\n", times)  # source nowhere to be found
    _store_gpu_result(store, spec, edits["H200"], times, device="NVIDIA H200")
    _store_gpu_result(store, spec, edits["side stream"], times, wall_extra_ms=5.0)
    _store_gpu_result(store, spec, edits["gone"], times, task_id="no_such_task")
    _store_gpu_result(store, other, TWO_KERNELS, {"small": 1e-5})
    rep = calibrate_from_store(store, GPU, sources=known)
    assert rep.n_pairs == sum(len(t) for _, _, t in truth)  # the good records still count
    text = "\n".join(rep.skipped)
    assert "no task_id in the stored result" in text
    assert sum("candidate source unknown" in r and "pass sources=" in r for r in rep.skipped) == 2
    assert sum("measured on H200, not H100-SXM" in r for r in rep.skipped) == len(times)
    assert sum("side_stream_suspect" in r for r in rep.skipped) == len(times)
    assert "task 'no_such_task' not found" in text
    assert len(rep.skipped) == 1 + 2 + 2 * len(times) + 1
    # given by hash, the two-kernel candidate is rebuilt, then skipped: one measured total
    # cannot be split between different launches
    known[Candidate(source=TWO_KERNELS, language="cuda").hash] = TWO_KERNELS
    rep2 = calibrate_from_store(store, GPU, sources=known)
    assert any("2 launches of 2 different configurations" in r for r in rep2.skipped)
    assert rep2.n_pairs == sum(len(t) for _, _, t in truth)


def test_wrong_source_for_hash_is_rejected(store, truth) -> None:
    spec, source, times = truth[0]
    _store_gpu_result(store, spec, source + "\n// v2\n", times)
    rep = calibrate_from_store(store, GPU, sources=lambda h: source + "\n// v3\n")
    assert any("does not hash to the stored candidate_hash" in r for r in rep.skipped)
    good = calibrate_from_store(store, GPU, sources=lambda h: source + "\n// v2\n")
    assert good.n_pairs == sum(len(t) for _, _, t in truth) + len(times) and good.skipped == []


def test_task_filter_and_no_data(store) -> None:
    rep = calibrate_from_store(store, GPU, task_filter={"vector_add"}, params=("launch_overhead_s",
                                                                                "dram_bw_fraction"))
    assert {p.task_id for p in rep.pairs} == {"vector_add"} and rep.n_pairs == 9
    assert rep.fit_error.params == ("launch_overhead_s", "dram_bw_fraction")
    pred = calibrate_from_store(store, GPU, task_filter=lambda t: t.startswith("matmul"))
    assert {p.task_id for p in pred.pairs} == {"matmul_fp32"}
    with pytest.raises(NoCalibrationDataError, match="no usable H200 GPU timing"):
        calibrate_from_store(store, "H200")  # every timing is from an H100


def test_save_load_round_trip(store, tmp_path, truth) -> None:
    rep = calibrate_from_store(store, GPU)
    path = save_constants(rep.constants, tmp_path / "sub" / "h100.json", gpu=GPU, fit_error=rep.fit_error)
    data = json.loads(path.read_text())
    assert data["gpu"] == "H100-SXM" and data["fit_error"]["n"] == sum(len(t) for _, _, t in truth)
    loaded = load_constants(path)
    assert loaded == rep.constants
    spec = resolve_task("c2cuda/vector_add")
    source = (spec.folder / spec.implementations[0].file).read_text()
    (_, report), = launch_reports(source, spec.entry, {"n": 262147}, GPU)
    t = costmodel.estimate(report, GPU, constants=loaded).time_s
    assert t == costmodel.estimate(report, GPU, constants=rep.constants).time_s
    assert not math.isclose(t, costmodel.estimate(report, GPU).time_s, rel_tol=1e-3)


def test_load_constants_bare_partial_and_bad(tmp_path) -> None:
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"launch_overhead_s": 3e-6}))
    assert load_constants(p) == DEFAULT_CONSTANTS.replace(launch_overhead_s=3e-6)
    p.write_text(json.dumps({"no_such_constant": 1.0}))
    with pytest.raises(CostModelError, match="no_such_constant"):
        load_constants(p)
    p.write_text(json.dumps({"launch_overhead_s": -1}))
    with pytest.raises(CostModelError, match="positive"):
        load_constants(p)
    p.write_text("[1, 2]")
    with pytest.raises(CostModelError, match="JSON object"):
        load_constants(p)
    with pytest.raises(CostModelError, match="cannot read"):
        load_constants(tmp_path / "missing.json")


def test_launches_whose_work_is_not_all_counted_are_skipped(store, truth) -> None:
    """A measured time paired with an estimate that leaves work out would teach the fit wrong constants."""
    spec = resolve_task("c2cuda/vector_add")
    source = (spec.folder / "impls" / "naive.cu").read_text().replace(
        "if (i < n) {", "for (int r = 0; r < (int)a[0] * 0 + 1; ++r) if (i < n) {")  # trip count read from memory
    _store_gpu_result(store, spec, source, {c.name: 1e-5 for c in spec.configs})
    rep = calibrate_from_store(store, GPU, sources={Candidate(source=source, language="cuda").hash: source})
    assert rep.n_pairs == sum(len(t) for _, _, t in truth)
    assert sum("does not count all" in s for s in rep.skipped) == len(spec.configs)
