"""estimate_c: the CPU back-end's estimated time is the sum of the cost model over every launch."""

from __future__ import annotations

from pathlib import Path

import pytest

from veriforge.cuda import analysis, costmodel
from veriforge.cuda.evaluate.backend import CCase
from veriforge.cuda.evaluate.estimate import estimate_c, estimate_launches
from veriforge.cuda.tasks import bundled_tasks, load_task
from veriforge.cuda.tasks.generate import make_case

PASSES = """
__global__ void scale(float* x, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a;
}
__global__ void fill(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 1.0f;
}
extern "C" void solve(float* x, int n) {
    fill<<<(n + 255) / 256, 256>>>(x, n);
    for (int p = 0; p < 3; ++p) scale<<<(n + 127) / 128, 128>>>(x, n >> p, 2.0f);
}
"""


def _cases(spec):
    out = []
    for cfg in spec.configs:
        case = make_case(spec, cfg.name, 0)
        out.append(CCase(config=cfg.name, trial=0, args=case.args, variables=dict(case.env)))
    return out


def test_every_launch_of_a_loop_is_priced_and_summed():
    est = estimate_launches(PASSES, "solve", {"n": 4096})
    total, details, features = est.time_s, est.launches, est.features
    assert est.status in ("exact", "upper_bound") and est.unknown == []
    assert [d["kernel"] for d in details] == ["fill", "scale", "scale", "scale"]
    expected = 0.0
    for kernel, grid, block, params in [("fill", 16, 256, {"n": 4096})] + [
            ("scale", 32, 128, {"n": 4096 >> p, "a": 2.0}) for p in range(3)]:
        rep = analysis.analyze(PASSES, kernel=kernel, grid=grid, block=block, params=params)
        expected += costmodel.estimate(rep, "H100-SXM").time_s
    assert total == pytest.approx(expected, rel=1e-9)
    assert "fill.flops" in features and "scale.flops" in features  # two kernels: features are prefixed


def test_matmul_naive_with_dim3_members_now_has_an_estimate_on_every_config():
    spec = load_task(next(f for f in bundled_tasks("c2cuda") if f.name == "matmul_fp32"))
    source = (spec.folder / "impls" / "naive.cu").read_text()
    ms, features, notes = estimate_c(spec, source, _cases(spec))
    assert notes == []
    assert [m.details["config"] for m in ms] == [c.name for c in spec.configs]
    by_cfg = {m.details["config"]: m for m in ms}
    assert by_cfg["small"].details["launches"][0]["grid"] == (3, 3, 1)  # ceil(47/16), ceil(33/16)
    assert by_cfg["square"].value > by_cfg["small"].value > 0  # 128^3 is more work than 33x47x29
    assert all(m.provenance == "estimated" for m in ms) and features.get("flops")


def test_undeterminable_launch_is_unknown_with_the_reason_not_a_guess():
    spec = load_task(next(f for f in bundled_tasks("c2cuda") if f.name == "vector_add"))
    src = (spec.folder / "impls" / "naive.cu").read_text()
    entry_at = src.index('extern "C"')
    body_at = src.index("{", entry_at) + 1
    # whether the kernel runs depends on device data (an output buffer), which no static reading knows
    src = (src[:body_at] + "\n    float flag = 0; cudaMemcpy(&flag, c, sizeof(float), cudaMemcpyDeviceToHost);\n"
           "    if (flag > 0) return;\n" + src[body_at:])
    ms, _, notes = estimate_c(spec, src, _cases(spec)[:1])
    assert ms == []
    assert notes and "flag" in notes[0] and "not known statically" in notes[0]


def test_a_config_that_launches_nothing_costs_nothing():
    src = PASSES.replace("extern \"C\" void solve(float* x, int n) {", "extern \"C\" void solve(float* x, int n) {\n"
                         "    if (n <= 1) return;")
    est = estimate_launches(src, "solve", {"n": 1})
    assert est.time_s == 0.0 and est.launches == [] and est.status == "exact"
    assert any("launches no kernel" in a for a in est.assumptions)


PEEL = """
__global__ void peel(const float* x, float* y, int n) {
    int head = (int)((4 - ((reinterpret_cast<unsigned long long>(x) >> 2) & 3)) & 3);
    int i = threadIdx.x;
    if (i < head) y[i] = x[i];
}
extern "C" void solve(const float* x, float* y, int n) { peel<<<1, 32>>>(x + 1, y, n); }
"""


def test_kernel_side_alignment_peeling_uses_the_pointer_address_the_host_passed():
    # x is 256-byte aligned, the host passes x + 1: the kernel peels 3 elements, so 3 lanes load and store.
    rep_unknown = analysis.analyze(PEEL, kernel="peel", grid=1, block=32, params={"n": 8}, use_nvcc=False)
    assert any("pointer cast" in u for u in rep_unknown.unknowns)
    rep = analysis.analyze(PEEL, kernel="peel", grid=1, block=32, params={"n": 8, "x": (1 << 32) + 4},
                           use_nvcc=False)
    assert not any("pointer cast" in u for u in rep.unknowns)
    assert rep.global_useful_bytes == 3 * 4 * 2
    assert estimate_launches(PEEL, "solve", {"n": 8}).launches[0]["kernel"] == "peel"


def test_bundled_vectorized_rmsnorm_with_alignment_peeling_has_an_estimate():
    spec = load_task(next(f for f in bundled_tasks("c2cuda") if f.name == "rmsnorm_rows"))
    ms, _, notes = estimate_c(spec, (spec.folder / "impls" / "vectorized.cu").read_text(), _cases(spec))
    assert notes == [] and len(ms) == len(spec.configs)


@pytest.mark.nvcc
def test_occupancy_api_block_size_comes_from_ptxas_and_the_occupancy_calculator():
    from veriforge.cuda import occupancy
    from veriforge.cuda.analysis.host import host_launches
    from veriforge.cuda.analysis.resources import ptxas_resources

    src = PASSES.replace("""    fill<<<(n + 255) / 256, 256>>>(x, n);""", """    int min_grid = 0, block = 0;
    cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, fill, 0, 0);
    fill<<<(n + block - 1) / block, block>>>(x, n);""")
    run = host_launches(src, "solve", {"n": 100_000})
    res, why = ptxas_resources(src, "fill", "sm_90", None, True)
    assert why is None
    expected = occupancy.max_potential_block_size("H100-SXM", res["registers"], res["smem_static"], 0)
    assert run.launches[0].block[0] == expected.block_size
    assert run.launches[0].grid[0] == -(-100_000 // expected.block_size)
    assert any("cudaOccupancyMaxPotentialBlockSize" in a for a in run.assumptions)


def test_torch2cuda_launcher_scalars_come_from_forward_and_init():
    from veriforge.cuda.evaluate.estimate import estimate_torch_impl

    spec = load_task(next(f for f in bundled_tasks("torch2cuda") if f.name == "rmsnorm"))
    times, notes, launches = estimate_torch_impl(spec, spec.folder / "impls" / "naive.py")  # uses self.dim
    assert notes == [] and set(times) == {c.name for c in (*spec.configs, *spec.timing)} and launches == 1
    assert all(t > 0 for t in times.values())


def test_torch2cuda_sizes_of_tensors_forward_allocates_are_known() -> None:
    """``out = torch.empty(x.size(1), ...)`` then ``_ext.run(x, out, out.numel(), ...)`` (how the generated
    reductions call their launchers), and ``x.numel() // x.size(-1)`` (the linear family): both evaluate,
    so the launch is priced at every configuration instead of being unknown."""
    import ast

    from veriforge.cuda.evaluate.estimate import _forward_calls, _new_tensor_shape, estimate_torch_impl

    sample = Path(__file__).resolve().parents[3] / "src" / "veriforge" / "data" / "cudaperf" / "sample" / "tasks"
    spec = load_task(sample / "torch2cuda" / "pt_red_sum_2d_dim0")
    times, notes, _ = estimate_torch_impl(spec, spec.folder / "impls" / "naive.py")
    assert notes == [] and set(times) == {c.name for c in (*spec.configs, *spec.timing)}
    text = ("class ModelNew:\n    def forward(self, x):\n        y = torch.empty(x.size(0), 7)\n"
            "        z = x.view(-1, 4)\n        _ext.run(y.numel(), x.numel() // x.size(-1), z.size(0))\n")
    assert _forward_calls(text, [(6, 8)], []) == [("run", {0: 42, 1: 6, 2: 12})]
    assert _new_tensor_shape(ast.parse("torch.empty_like(q)").body[0].value, {"q": (2, 3)}, {}) == (2, 3)


OPTIONAL_OUT = r"""
__global__ void rowstats(float* mean, const float* inp, int C) {
    int row = blockIdx.x;
    float s = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) s += inp[row * C + c];
    if (mean != nullptr) mean[row * C + threadIdx.x] = s;
}
extern "C" void with_mean(float* mean, const float* inp, int n) { rowstats<<<n, 256>>>(mean, inp, 4096); }
extern "C" void without(float* mean, const float* inp, int n) { rowstats<<<n, 256>>>(nullptr, inp, 4096); }
"""


def test_a_null_pointer_argument_makes_the_kernels_null_check_false():
    """An optional output the host passes as nullptr is not written: the store is not priced."""
    with_mean = estimate_launches(OPTIONAL_OUT, "with_mean", {"n": 4096})
    without = estimate_launches(OPTIONAL_OUT, "without", {"n": 4096})
    assert with_mean.status == without.status == "exact"
    assert "global_store_efficiency" in with_mean.features and "global_store_efficiency" not in without.features
    assert without.time_s < with_mean.time_s


HIDDEN_BEHIND_NULL = r"""
float* get_buffer();
__global__ void k(float* p, const float* inp, float* out, int C) {
    float s = 0.0f;
    if (p == nullptr) { for (int c = threadIdx.x; c < C; c += blockDim.x) s += inp[blockIdx.x * C + c]; }
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
extern "C" void given_null(const float* inp, float* out, int n) { k<<<n, 256>>>(nullptr, inp, out, 65536); }
extern "C" void opaque(const float* inp, float* out, int n) { k<<<n, 256>>>(get_buffer(), inp, out, 65536); }
extern "C" void allocated(float* buf, const float* inp, float* out, int n) { k<<<n, 256>>>(buf, inp, out, 65536); }
"""


def test_work_behind_a_null_check_on_a_pointer_the_host_code_hides_is_counted():
    """A hostile candidate passes a null the host interpreter cannot see (a call it cannot follow)
    and does its work under ``if (p == nullptr)``: that pointer is not assumed to be an allocation,
    so the work is priced (as an upper bound), not dropped."""
    null = estimate_launches(HIDDEN_BEHIND_NULL, "given_null", {"n": 1024})
    hidden = estimate_launches(HIDDEN_BEHIND_NULL, "opaque", {"n": 1024})
    allocated = estimate_launches(HIDDEN_BEHIND_NULL, "allocated", {"n": 1024})
    assert null.status == allocated.status == "exact" and hidden.status == "upper_bound"
    assert hidden.time_s >= null.time_s > 10 * allocated.time_s
