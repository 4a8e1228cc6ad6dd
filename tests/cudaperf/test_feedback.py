"""CudaPerf feedback: what the model is told after each attempt, and the opening prompt.

Real evaluations on the CPU back-end of the bundled ``c2cuda/sum_reduce`` task (one module-scoped
fixture, ~5 s), so the feedback is checked against what the harness actually reports.
"""

from __future__ import annotations

import re

import pytest

from veriforge.cuda.tasks.load import find_task
from veriforge.cudaperf.feedback import (
    extract_candidate,
    feedback_for_text,
    feedback_message,
    task_prompt,
)

TASK = "c2cuda/sum_reduce"
IMPLS = find_task(TASK) / "impls"
GOOD = (IMPLS / "warp_shuffle.cu").read_text()
SLOW = (IMPLS / "shared_tree.cu").read_text()
CHEAT = ('#include <cuda_runtime.h>\nextern "C" void solve(const float* x, float* out, int n) {\n'
         '    float h[1] = {0};\n    cudaMemcpy(h, x, 4, cudaMemcpyDeviceToHost);\n'
         '    cudaMemcpy(out, h, 4, cudaMemcpyHostToDevice);\n}\n')


def _fence(code: str) -> str:
    return f"PLAN: reduce.\n```cuda\n{code}```\n"


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory, link_build_caches):
    """feedback, reward and result for each kind of attempt (turn 1 of 3)."""
    from veriforge.cuda.evaluate import evaluate

    home = tmp_path_factory.mktemp("fbhome")
    link_build_caches(home)
    mp = pytest.MonkeyPatch()
    mp.setenv("VERIFORGE_HOME", str(home))

    base = evaluate(TASK, IMPLS / "atomic.cu")
    assert base.verdict.correct
    broken = GOOD.replace("__syncthreads();", "__syncthreads()", 1)
    assert broken != GOOD
    cases = {"compile": broken, "wrong": GOOD.replace("+=", "-=", 1), "cheat": CHEAT, "correct": SLOW}
    out = {name: feedback_for_text(TASK, _fence(src), baseline=base, turn=1, turns=3)
           for name, src in cases.items()}
    mp.undo()
    return out


def test_compile_error_is_pinned_to_the_models_line(evaluated):
    fb, rew, _res = evaluated["compile"]
    assert rew.outcome == "compile_error" and rew.value == pytest.approx(-0.5)
    line = next(i for i, t in enumerate(GOOD.splitlines(), 1) if "__syncthreads();" in t)
    assert f"line {line}" in fb  # the model's own line number ...
    assert "__syncthreads()" in fb.split(f"line {line}", 1)[1]  # ... with the offending source line
    assert fb.startswith("Attempt 1 of 3: compile error.")
    assert "Fix the problem" in fb and "```cuda" in fb


def test_wrong_answer_says_where_and_how_much_without_leaking_more(evaluated):
    fb, rew, res = evaluated["wrong"]
    assert rew.outcome == "wrong"
    assert res.verdict.reason in fb  # the harness's own reason, verbatim
    failing = [r for r in res.verdict.results if not r.passed]
    assert len(failing) >= 2
    for r in failing[1:]:  # the other configurations: counts and relative error, no expected values
        assert f"config {r.config!r}" in fb
        expected = re.search(r"expected ([^,;]+)", r.message).group(1)
        assert expected not in fb
        assert "max rel error" in fb
    secret = res.details.get("input_secret")
    assert secret is not None and str(secret) not in fb
    assert "max abs error" not in fb.split(res.verdict.reason, 1)[1]


def test_cheat_feedback_names_the_rejection(evaluated):
    fb, rew, _res = evaluated["cheat"]
    assert rew.outcome == "cheat" and rew.value == pytest.approx(-1.0)
    assert "anti-cheat" in fb
    assert "no __global__ kernel" in fb  # the harness's finding reaches the model


def test_correct_feedback_has_speedup_provenance_and_findings(evaluated):
    fb, rew, _res = evaluated["correct"]
    assert rew.correct and rew.speedup is not None and rew.speedup > 1
    assert f"{rew.speedup:.3g}x" in fb
    assert "estimated by the cost model" in fb and "not measured" in fb
    # shared_tree writes its partial sums with one thread per block: the analysis finds the
    # uncoalesced stores and the reward's coalescing score drops; both reach the model.
    assert "sectors per request" in fb and "coalescing" in fb
    assert "bound on config" in fb  # which bound limits each launch
    assert f"Reward: {rew.value:+.3f}" in fb
    assert "Make it faster" in fb


def test_last_turn_has_no_instruction(evaluated):
    _fb, rew, res = evaluated["correct"]
    last = feedback_message(res, rew, turn=3, turns=3)
    assert last.startswith("Attempt 3 of 3: correct.")
    assert "Make it faster" not in last and "Fix the problem" not in last


def test_task_prompt_c_and_torch():
    c_msgs = task_prompt(TASK)
    assert [m["role"] for m in c_msgs] == ["system", "user"]
    user = c_msgs[1]["content"]
    assert 'extern "C" void solve(const float* x, float* out, int n)' in user
    assert (find_task(TASK) / "reference.c").read_text().strip() in user
    assert "```cuda" in user and "seed" not in user.lower()
    t_user = task_prompt("torch2cuda/sum_reduce_dim1")[1]["content"]
    assert "class ModelNew" in t_user and "load_cuda" in t_user and "```python" in t_user
    assert "torch.sum(x, dim=1, keepdim=True)" in t_user  # the reference source is shown


def test_extract_candidate_per_family():
    assert extract_candidate(_fence(GOOD), "c2cuda") == GOOD
    py = "import torch\nclass ModelNew: pass\n"
    assert extract_candidate(f"plan\n```python\n{py}```\nthanks", "torch2cuda") == py
    assert extract_candidate([{"role": "assistant", "content": f"```py\n{py}```"}], "torch2cuda") == py
