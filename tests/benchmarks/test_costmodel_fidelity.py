"""The fidelity benchmark's data and helpers (benchmarks/costmodel_fidelity.py).

Cheap checks only: the data file is well formed and cited, every kernel exists and parses, the
published figures convert to plausible times, and the statistics helpers give known answers. The
benchmark itself (analysis + estimates of every kernel) is run by the script, not here.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "costmodel_fidelity.py"


@pytest.fixture(scope="module")
def fid():
    spec = importlib.util.spec_from_file_location("costmodel_fidelity", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["costmodel_fidelity"] = mod  # dataclasses need the module registered
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("costmodel_fidelity", None)


@pytest.fixture(scope="module")
def series(fid):
    return fid.load_series()


def test_series_file_is_well_formed_and_cited(fid, series):
    assert fid.validate_series(series) == []
    assert len(series) >= 3
    for s in series:
        assert s["source"].startswith("https://"), s["id"]
        assert s["where"].strip() and s["timing"].strip(), s["id"]
        assert len(s["kernels"]) >= 4, s["id"]
        for k in s["kernels"]:
            assert k["where"].strip(), (s["id"], k["label"])
    # the brief's first series is there, with the worklog's kernels
    sib = next(s for s in series if s["id"] == "siboehm_sgemm_a6000")
    assert {"1: Naive", "2: GMEM Coalescing", "5: 2D Blocktiling", "10: Warptiling"} <= {
        k["label"] for k in sib["kernels"]}


def test_every_kernel_exists_and_parses(fid, series):
    from veriforge.cuda.analysis.parse import find_kernel, parse_source

    for s in series:
        for k in s["kernels"]:
            path = fid.KERNEL_DIR / k["file"]
            parsed = parse_source(path.read_text())
            assert not parsed.parse_errors, (k["file"], parsed.parse_errors)
            kdef = find_kernel(parsed, k["kernel"])
            wanted = set(k.get("template_args", {}))
            have = {p.name for p in (kdef.template or [])}
            assert wanted == have, (k["file"], k["kernel"], wanted, have)


def test_every_gpu_is_in_the_table(series):
    from veriforge.cuda.arch import get_gpu

    for s in series:
        get_gpu(s["gpu"])


def test_published_figures_convert_to_times(fid, series):
    by_id = {s["id"]: s for s in series}
    sib = by_id["siboehm_sgemm_a6000"]
    naive = sib["kernels"][0]
    assert fid.published_time_s(sib, naive) == pytest.approx(2 * 4096**3 / 309.0e9)
    tr = by_id["yencal_transpose_h100"]
    assert fid.published_time_s(tr, tr["kernels"][0]) == pytest.approx(18.0645e-3)
    red = by_id["masterskepticista_reduce_3090"]
    assert fid.published_time_s(red, red["kernels"][-1]) == pytest.approx(2**25 * 4 / 859e9)
    lm = by_id["leimao_gemm_3090"]
    assert fid.published_time_s(lm, lm["kernels"][0]) == pytest.approx(2 * 4096**3 / 0.278129e12)
    with pytest.raises(ValueError, match="unknown metric"):
        fid.published_time_s({"metric": "furlongs"}, {"published": 1, "label": "x"})
    with pytest.raises(ValueError, match="needs `work_flops`"):
        fid.published_time_s({"metric": "GFLOP/s"}, {"published": 1, "label": "x"})


def test_published_figures_are_below_peak(fid, series):
    """A conversion error (wrong work, wrong unit) would show up as a published time faster than
    the hardware: none may be."""
    from veriforge.cuda.arch import get_gpu

    for s in series:
        g = get_gpu(s["gpu"])
        for k in s["kernels"]:
            t = fid.published_time_s(s, k)
            assert fid.peak_violations(t, s["true_flops"], s["compulsory_bytes"], g) == [], (s["id"], k["label"])


def test_sweep_launches(fid):
    k = {"sweep_block": [64, 1024], "grid_elements": 1000, "dynamic_smem_per_thread": 4}
    assert fid.launches(k) == [((16,), (64,), 256), ((1,), (1024,), 4096)]
    assert fid.launches({"grid": [2, 3], "block": [32]}) == [((2, 3), (32,), 0)]


def test_validate_series_reports_problems(fid, tmp_path):
    bad = [{"id": "x", "metric": "ms", "source": "ftp://nowhere", "kernels": [
        {"label": "a", "file": "missing.cu", "kernel": "k", "published": 1.0, "grid": [1], "block": [32]}]}]
    problems = "\n".join(fid.validate_series(bad, kernel_dir=tmp_path))
    for needle in ("missing `title`", "missing `where`", "https URL", "at least 4", "missing.cu not found",
                   "kernel a: missing `where`"):
        assert needle in problems


def test_rankdata_and_spearman(fid):
    assert fid.rankdata([10, 30, 20]) == [1, 3, 2]
    assert fid.rankdata([1, 2, 2, 3]) == [1, 2.5, 2.5, 4]
    assert fid.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert fid.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # no ties: 1 - 6 * sum(d^2) / (n (n^2 - 1)) = 1 - 6 * 4 / 120
    assert fid.spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    # ties: Pearson correlation of the averaged ranks (scipy.stats.spearmanr gives 0.9486832980505138)
    assert fid.spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486832980505138)
    assert fid.spearman([1, 1, 1], [1, 2, 3]) is None
    assert fid.spearman([1], [2]) is None
    with pytest.raises(ValueError):
        fid.spearman([1, 2], [1])


def test_worst_ratio_and_factor(fid):
    assert fid.worst_ratio([1.0, 3.0, 0.25], [1.0, 1.0, 1.0]) == pytest.approx(0.25)
    assert fid.worst_ratio([2.0, 1.0], [1.0, 1.1]) == pytest.approx(2.0)
    assert fid.worst_ratio([], []) is None
    assert fid.within_factor(2.0) and fid.within_factor(0.5) and fid.within_factor(1.0)
    assert not fid.within_factor(2.01) and not fid.within_factor(0.49)


def test_peak_violations(fid):
    g = SimpleNamespace(fp32_tflops=10.0, dram_bandwidth_gbs=1000.0)
    assert fid.peak_violations(1.0, 1e12, 1e9, g) == []
    out = fid.peak_violations(1e-3, 1e11, 2e9, g)  # 100 TFLOP/s and 2000 GB/s claimed
    assert len(out) == 2 and "TFLOP/s" in out[0] and "GB/s" in out[1]


def test_summary_counts_unknown_rows(fid):
    """An unknown estimate is counted in coverage, never silently dropped from the figures."""
    def entry(pub):
        return fid.Entry(series="s", label=str(pub), gpu="g", published_s=pub, true_flops=0, compulsory_bytes=0,
                         launches=[])

    rows = [(entry(1.0), fid.Priced(1.5, 1.5, "exact")), (entry(2.0), fid.Priced(5.0, 5.0, "exact")),
            (entry(3.0), fid.Priced(None, 0.1, "unknown", why=["loop trip count unknown"])),
            (entry(4.0), fid.Priced(None, None, "error", why=["estimate raised CostModelError"]))]
    s = fid.summarize(rows)
    assert (s.n, s.covered, s.coverage) == (4, 2, "2/4")
    assert s.worst == pytest.approx(2.5) and s.within == 1
    assert s.rho == pytest.approx(1.0)
    assert s.geomean == pytest.approx(math.sqrt(1.5 * 2.5))


def test_gpu_measure_without_gpu_fails_clearly(fid, monkeypatch, tmp_path, capsys):
    """--gpu-measure on a machine without a GPU stops at once with a message, before any analysis."""
    monkeypatch.setattr(fid.shutil, "which", lambda name: None)
    with pytest.raises(fid.GpuMeasureError, match="needs an NVIDIA GPU"):
        fid.gpu_measure(["vector_add"], None, 3, 10.0, tmp_path)
    assert fid.main(["--gpu-measure", "--out", str(tmp_path / "r.txt")]) == 2
    assert "needs an NVIDIA GPU" in capsys.readouterr().err
    assert not (tmp_path / "r.txt").exists()
