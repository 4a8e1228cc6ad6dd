"""``[[timing]]`` configurations: sizes a candidate is timed at but (on the CPU back-end) never run.

Speed at verification sizes is launch overhead, so the reward scores a task's timing sizes when it
has them. Because they are only estimated, a candidate could behave differently there than where it
was verified; the estimate keeps their time only when every kernel also ran at a verified size and
the counted traffic covers the task's minimum. Real candidates through the harness (CPU runtime)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from veriforge.cuda.evaluate.harness import evaluate
from veriforge.cuda.tasks import TaskFormatError, bundled_tasks, load_task
from veriforge.cudaperf.reward import reward

TIMING = '''
[[timing]]
name = "t_large"
seed = 21
n = 4194304
'''

NAIVE = r'''
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    add<<<(n + 255) / 256, 256>>>(a, b, c, n);
}
'''
# Correct wherever it is verified, but above a million elements it only does the first thousand.
SHORTCUT = NAIVE.replace("add<<<(n + 255) / 256, 256>>>(a, b, c, n);",
                         "int m = n > 1000000 ? 1000 : n;\n    add<<<(m + 255) / 256, 256>>>(a, b, c, m);")
# Above a million elements it switches to a kernel no verified size ever ran.
SWITCH = NAIVE.replace("extern", r'''__global__ void add_big(const float* a, const float* b, float* c, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i] + b[i];
}
extern''').replace("add<<<(n + 255) / 256, 256>>>(a, b, c, n);",
                   "if (n > 1000000) add_big<<<264, 256>>>(a, b, c, n);\n"
                   "    else add<<<(n + 255) / 256, 256>>>(a, b, c, n);")
# A thread does 4 elements: fewer blocks, same traffic (the faster-at-scale strategy here).
FOUR = r'''
__global__ void add4(const float* a, const float* b, float* c, int n) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    for (int k = 0; k < 4; ++k) if (i + k < n) c[i + k] = a[i + k] + b[i + k];
}
extern "C" void solve(const float* a, const float* b, float* c, int n) {
    add4<<<(n + 1023) / 1024, 256>>>(a, b, c, n);
}
'''


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = next(p for p in bundled_tasks("c2cuda") if p.name == "vector_add")
    dst = tmp_path_factory.mktemp("timing") / "vector_add"
    shutil.copytree(src, dst)
    own = (dst / "task.toml").read_text().split("[[timing]]")[0]  # replace the bundled timing config by ours
    (dst / "task.toml").write_text(own.rstrip() + "\n" + TIMING)
    return dst


def _eval(task: Path, source: str, tmp_path: Path, name: str):
    path = tmp_path / f"{name}.cu"
    path.write_text(source)
    return evaluate(load_task(task), path, "cpu")


def test_timing_config_is_estimated_not_run_and_decides_speed(task: Path, tmp_path: Path) -> None:
    res = _eval(task, NAIVE, tmp_path, "naive")
    assert res.verdict.correct
    assert {r.config for r in res.verdict.results} == {"small", "odd", "large"}  # never run at 4M here
    est = res.details["estimate"]
    assert est["timing"] == ["t_large"] and est["configs"]["t_large"]["time_s"] > est["configs"]["large"]["time_s"]
    assert res.details["timing_configs"] == ["t_large"]
    r = reward(res, est["configs"]["t_large"]["time_s"] * 2)  # a baseline twice as slow at the timing size
    assert r.speedup == pytest.approx(2.0)


@pytest.mark.parametrize("source, why", [(SHORTCUT, "the whole task is not done there"),
                                         (SWITCH, "which no verified configuration ran")])
def test_behaviour_only_at_timing_sizes_gets_no_time(task: Path, tmp_path: Path, source: str, why: str) -> None:
    res = _eval(task, source, tmp_path, "cand")
    assert res.verdict.correct  # it is right everywhere it was checked ...
    t = res.details["estimate"]["configs"]["t_large"]
    assert t["time_s"] is None and any(why in u for u in t["unknown"])  # ... but its large-size time is not trusted
    honest = _eval(task, NAIVE, tmp_path, "naive")
    r_cand, r_honest = reward(res, honest), reward(honest, honest)
    assert r_cand.speedup is None and r_cand.value < r_honest.value  # unknown speed is the worst speed


def test_reward_orders_strategies_at_timing_size(task: Path, tmp_path: Path) -> None:
    naive, four = _eval(task, NAIVE, tmp_path, "naive"), _eval(task, FOUR, tmp_path, "four")
    tn = naive.details["estimate"]["configs"]["t_large"]["time_s"]
    tf = four.details["estimate"]["configs"]["t_large"]["time_s"]
    assert (reward(four, naive).value > reward(naive, naive).value) == (tf < tn)


def test_timing_names_share_the_config_namespace(task: Path, tmp_path: Path) -> None:
    bad = tmp_path / "vector_add"
    shutil.copytree(task, bad)
    (bad / "task.toml").write_text((bad / "task.toml").read_text().replace('name = "t_large"', 'name = "large"'))
    with pytest.raises(TaskFormatError, match="duplicate config names"):
        load_task(bad)
