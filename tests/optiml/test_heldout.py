"""Held-out sizes: a kernel right only at the sizes the proposers saw cannot win (optiml/heldout.py)."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from veriforge.core.store import RunStore
from veriforge.core.types import Candidate
from veriforge.cuda.tasks import find_task, load_task
from veriforge.optiml.heldout import HeldOut, candidate_configs
from veriforge.optiml.xsearch import KernelEvaluator, OptimizeResult, XSearchSettings, make_engine
from veriforge.search.interfaces import Edit, Evaluation


def _aligned_vector_add(tmp_path):
    """vector_add with every shown size a multiple of 256 (the bundled one has odd sizes)."""
    src = find_task("c2cuda/vector_add")
    folder = tmp_path / "vector_add_aligned"
    shutil.copytree(src, folder)
    toml = (folder / "task.toml").read_text().replace('id = "vector_add"', 'id = "vector_add_aligned"')
    toml = toml[: toml.index("[[configs]]")] + (
        '[[configs]]\nname = "a"\nseed = 1\nn = 1024\n\n[[configs]]\nname = "b"\nseed = 2\nn = 8192\n\n'
        + toml[toml.index("[[implementations]]"): toml.index("# --- timing")])
    (folder / "task.toml").write_text(toml)
    return load_task(folder)


START = """
__global__ void add4(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { for (int r = 0; r < 4; ++r) c[i] = a[i] + b[i]; }
}
extern "C" void solve(const float* a, const float* b, float* c, int n) { add4<<<(n + 255) / 256, 256>>>(a, b, c, n); }
"""
# Faster than the start and right at 1024 and 8192 only: no tail block, no bounds check.
OVERFIT = """
__global__ void add1(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[i] + b[i];
}
extern "C" void solve(const float* a, const float* b, float* c, int n) { add1<<<n / 256, 256>>>(a, b, c, n); }
"""
# Right everywhere, a little slower than the overfit one (two passes).
HONEST = """
__global__ void add2(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { for (int r = 0; r < 2; ++r) c[i] = a[i] + b[i]; }
}
extern "C" void solve(const float* a, const float* b, float* c, int n) { add2<<<(n + 255) / 256, 256>>>(a, b, c, n); }
"""


class Ranked(KernelEvaluator):
    """The real verifier; the ranking is planted (start 3, overfit 1, honest 2) so the test does not hang
    on the cost model's view of three tiny kernels."""

    def evaluate(self, state):
        ev = super().evaluate(state)
        if not ev.ok:
            return ev
        name = re.search(r"__global__ void (\w+)", state.source).group(1)
        rank = {"add4": 3.0, "add1": 1.0, "add2": 2.0}[name]
        return Evaluation(ok=True, objective=rank * 1e-6, provenance=ev.provenance, details=ev.details)


class Scripted:
    name = "scripted"

    def propose(self, node, k):
        if node.parent is not None:
            return []
        return [Edit(Candidate(source=OVERFIT), description="overfit"), Edit(Candidate(source=HONEST),
                                                                             description="honest")]


def test_generated_sizes_break_alignment_and_are_not_task_sizes(tmp_path):
    spec = _aligned_vector_add(tmp_path)
    configs = candidate_configs(spec)
    sizes = [c.variables["n"] for c in configs]
    assert sizes and not {1024, 8192} & set(sizes)
    assert any(n % 256 for n in sizes) and min(sizes) < 32   # a tail, and smaller than a warp
    assert all(c.name.startswith("heldout.") for c in configs) and len({c.name for c in configs}) == len(configs)


def test_overfit_winner_is_rejected_at_held_out_sizes_and_the_honest_kernel_wins(tmp_path):
    spec = _aligned_vector_add(tmp_path)
    store = RunStore(tmp_path / "runs.sqlite")
    settings = XSearchSettings(max_evaluations=3, final_top_k=0, suspicious_factor=None, regression_tolerance=None)
    start = Candidate(source=START)
    ev = Ranked(spec, settings, store=store)
    ev.heldout = HeldOut(spec, start, store=store)
    result = make_engine(settings, [Scripted()], ev, store, task_id=spec.id).run_sync(start)
    by = {(n.edit or {}).get("description"): n for n in result.tree.nodes}
    # the search itself verified the overfit kernel (the shown sizes are aligned) and ranked it first
    assert by["overfit"].evaluation.ok and by["overfit"].evaluation.objective < by["honest"].evaluation.objective
    assert by["overfit"].status == "rejected"
    assert by["overfit"].reason.startswith("failed the final check: wrong at held-out input sizes never shown")
    assert not re.search(r"\bn\s*=\s*\d", by["overfit"].reason)   # the sizes themselves stay out of the reason
    assert result.best.id == by["honest"].id
    data = OptimizeResult(spec, "start", settings, result, ev.calls, ev.fresh, heldout=ev.heldout.to_json()).tree_json()
    held = json.loads(json.dumps(data["heldout"]))
    assert held["configs"] and all(c["n"] not in (1024, 8192) for c in held["configs"])
    checks = held["checks"]
    assert checks[Candidate(source=OVERFIT).hash]["passed"] is False
    assert checks[Candidate(source=HONEST).hash]["passed"] is True


def test_sizes_outside_the_task_are_dropped_not_blamed(tmp_path):
    """bitonic_sort needs a power of two (and log2n to match n): the start fails there, so no such size is kept."""
    spec = load_task(find_task("c2cuda/bitonic_sort"))
    naive = min(spec.implementations, key=lambda i: (i.quality, i.name))
    start = Candidate(source=(spec.folder / naive.file).read_text())
    held = HeldOut(spec, start, store=RunStore(tmp_path / "runs.sqlite"))
    held.prepare()
    assert held.dropped and all("outside the task's domain" in why for why in held.dropped.values())
    if held.configs:   # whatever is kept, the start passes (it decided)
        assert held.check(start).ok


def test_a_candidate_wrong_as_a_whole_is_blamed_without_asking_the_bundled_implementations(tmp_path, monkeypatch):
    spec = _aligned_vector_add(tmp_path)
    held = HeldOut(spec, Candidate(source=START), store=RunStore(tmp_path / "runs.sqlite"))
    held.prepare()
    assert held.configs
    monkeypatch.setattr(held, "_outside_domain", lambda name: pytest.fail("no size can excuse a whole failure"))
    ev = held.check(Candidate(source=START.replace("int i =", "int i = undeclared_name +")))
    assert not ev.ok and ev.rejected_reason.startswith("failed as a whole at held-out input sizes")
    assert "heldout." not in ev.rejected_reason        # config names encode the sizes: not in the reason
