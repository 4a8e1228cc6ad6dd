"""Inputs drawn from a secret per evaluation defeat memorised answers; the secret reproduces a verdict."""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.core.types import Candidate
from veriforge.cuda.evaluate import anticheat_c
from veriforge.cuda.evaluate.backend import HARNESS_VERSION, TimingOptions
from veriforge.cuda.evaluate.harness import _evaluate_uncached, _trial_numbers, evaluate
from veriforge.cuda.tasks import bundled_tasks, load_task
from veriforge.cuda.tasks.generate import make_case
from veriforge.cuda.tasks.reference import reference_outputs


@pytest.fixture(scope="module")
def spec():
    return next(s for s in map(load_task, bundled_tasks("c2cuda")) if s.id == "vector_add")


def _memoriser(spec) -> str:
    """A kernel that ignores its inputs and replays the answers of the task's fixed trials 0 and 1."""
    tables, firsts = [], []
    for t in (0, 1):
        case = make_case(spec, "small", t)
        firsts.append(float(np.asarray(case.args[0])[0]))
        tables.append(reference_outputs(spec, case, version=HARNESS_VERSION)["c"])
    rows = [", ".join(f"{v!r}f" for v in tab.tolist()) for tab in tables]
    return (f"__device__ float T0[] = {{{rows[0]}}};\n__device__ float T1[] = {{{rows[1]}}};\n"
            "__global__ void k(const float* a, float* c, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"    if (i < n) c[i] = (a[0] == {firsts[0]!r}f) ? T0[i] : T1[i];\n}}\n"
            'extern "C" void solve(const float* a, const float* b, float* c, int n) {\n'
            "    k<<<(n + 255) / 256, 256>>>(a, c, n);\n}\n")


def test_memorised_answers_pass_fixed_trials_but_not_secret_ones(spec, monkeypatch) -> None:
    monkeypatch.setattr(anticheat_c, "scan_c", lambda *a, **k: [])
    cand = Candidate(source=_memoriser(spec), language="cuda")
    fixed = _evaluate_uncached(spec, cand, "cpu", trials=2, timeout=None, seed=None, configs=["small"],
                               memcheck=False, estimate=False, timing=TimingOptions(), secret=None)
    assert fixed.verdict.correct  # the memoriser really knows the fixed answers
    res = evaluate(spec, cand, configs=["small"], estimate=False)
    assert not res.verdict.correct and "input_secret" in res.details


def test_each_evaluation_draws_a_new_secret_and_the_secret_reproduces(spec) -> None:
    impl = spec.folder / spec.implementations[0].file
    a = evaluate(spec, impl, configs=["small"], estimate=False)
    b = evaluate(spec, impl, configs=["small"], estimate=False)
    assert a.verdict.correct and b.verdict.correct
    assert a.details["input_secret"] != b.details["input_secret"]
    again = evaluate(spec, impl, configs=["small"], estimate=False, secret=a.details["input_secret"])
    assert again.details["input_secret"] == a.details["input_secret"]
    assert _trial_numbers(2, None, 7)[0] == 0 and _trial_numbers(2, None, 7)[1] >= 1 << 40
    assert _trial_numbers(3, 5) == _trial_numbers(3, 5)  # an explicit seed stays deterministic
