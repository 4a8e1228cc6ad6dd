"""The ``privatize_histogram`` operator: shared sub-histograms per block, correct on ragged sizes, the
run-time fallback for too many bins, refusals of near misses, nvcc, and the search keeping the edit."""

from __future__ import annotations

import numpy as np
import pytest

from veriforge.cuda import cpu
from veriforge.optiml.operators.privatize_histogram import privatize_histogram_edits

# Five shapes in one file (one compile): a byte histogram (guard shape), float bins clamped to a
# parameter (dynamic shared memory), digits after an early return (% 10), a float-weighted histogram
# that is already grid-stride (& 63, address hist + E), and an unsigned long long histogram whose
# bins are checked against a parameter (out-of-range bins skipped, kept as they were), and the four
# bytes of each word (an atomic in a loop, `& 0xFFU`).
KERNELS = """\
#include <cuda_runtime.h>

__global__ void h_bytes(const unsigned char* data, unsigned int* hist, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&hist[data[i]], 1u);
    }
}

__global__ void h_floats(const float* x, unsigned int* hist, int n, int nbins) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int b = (int)(x[i] * (float)nbins);
        if (b > nbins - 1) b = nbins - 1;
        atomicAdd(&hist[b], 1u);
    }
}

__global__ void h_digits(const int* x, int* hist, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int d = x[i] % 10;
    atomicAdd(&hist[d], 1);
}

__global__ void h_weights(const int* k, const float* w, float* hist, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        atomicAdd(hist + (k[i] & 63), w[i]);
    }
}

__global__ void h_checked(const int* idx, unsigned long long* hist, int* seen, int n, int nbins) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int b = idx[i];
        seen[i] = b;
        if (b >= 0 && b < nbins) {
            atomicAdd(&hist[b], 2ull);
        }
    }
}

__global__ void h_words(const unsigned int* data, unsigned int* hist, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned int w = data[i];
        for (int k = 0; k < 4; k++) atomicAdd(&hist[(w >> (8 * k)) & 0xFFU], 1U);
    }
}

extern "C" void run_bytes(const unsigned char* data, unsigned int* hist, int n) {
    h_bytes<<<(n + 255) / 256, 256>>>(data, hist, n);
}
extern "C" void run_floats(const float* x, unsigned int* hist, int n, int nbins) {
    int threads = 128;
    h_floats<<<(n + threads - 1) / threads, threads>>>(x, hist, n, nbins);
}
extern "C" void run_digits(const int* x, int* hist, int n) {
    h_digits<<<(n + 63) / 64, 64>>>(x, hist, n);
}
extern "C" void run_weights(const int* k, const float* w, float* hist, int n) {
    h_weights<<<(n + 255) / 256, 256>>>(k, w, hist, n);
}
extern "C" void run_words(const unsigned int* data, unsigned int* hist, int n) {
    h_words<<<(n + 127) / 128, 128>>>(data, hist, n);
}
extern "C" void run_checked(const int* idx, unsigned long long* hist, int* seen, int n, int nbins) {
    h_checked<<<(n + 255) / 256, 256>>>(idx, hist, seen, n, nbins);
}
"""

NAMES = ["h_bytes", "h_floats", "h_digits", "h_weights", "h_checked", "h_words"]


def _all_edited(source: str) -> tuple[str, dict[str, dict]]:
    """Apply the operator until it proposes nothing: one kernel per edit, an edited kernel refused."""
    evidence: dict[str, dict] = {}
    for _ in range(len(NAMES) + 1):
        edits = privatize_histogram_edits(source)
        if not edits:
            return source, evidence
        assert len({e.evidence["kernel"] for e in edits}) == len(edits)
        assert not set(e.evidence["kernel"] for e in edits) & set(evidence), "an edited kernel was edited again"
        evidence[edits[0].evidence["kernel"]] = edits[0].evidence
        source = edits[0].source
    raise AssertionError("the operator keeps proposing")


def test_every_shape_is_recognised_with_its_bound() -> None:
    edited, evidence = _all_edited(KERNELS)
    assert set(evidence) == set(NAMES)
    assert {k: (e["bins"], e["static"], e["shape"]) for k, e in evidence.items()} == {
        "h_bytes": ("256", True, "guard"), "h_floats": ("nbins", False, "guard"),
        "h_digits": ("10", True, "return"), "h_weights": ("64", True, "loop"),
        "h_checked": ("nbins", False, "guard"), "h_words": ("256", True, "guard")}
    assert evidence["h_floats"]["bound"].startswith("the clamp")
    assert evidence["h_checked"]["bound"] == "the condition b<nbins"
    # the bin expression and its checks are kept token for token, the early return is gone
    assert "if (b > nbins - 1) b = nbins - 1;" in edited and "if (b >= 0 && b < nbins) {" in edited
    assert "return" not in edited.split("h_digits", 1)[1].split("__global__")[0]
    assert edited.count("__syncthreads();") == 12


@pytest.fixture(scope="module")
def module():
    edited, _ = _all_edited(KERNELS)
    return cpu.compile(edited, sanitize=True)


@pytest.mark.parametrize("n", [1, 7, 255, 1001, 70001])
def test_bytes_and_digits_ragged(module, n: int) -> None:
    rng = np.random.default_rng(n)
    data = rng.integers(0, 256 if n != 70001 else 3, n).astype(np.uint8)  # 70001: skewed (3 hot bins)
    hist = np.zeros(256, np.uint32)
    module.call("run_bytes", [data, hist, n])
    assert np.array_equal(hist, np.bincount(data, minlength=256))
    x = rng.integers(0, 1000, n).astype(np.int32)
    digits = np.full(10, 5, np.int32)  # not zero: the kernel adds to what is there
    module.call("run_digits", [x, digits, n])
    assert np.array_equal(digits, 5 + np.bincount(x % 10, minlength=10))
    words = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    hist = np.zeros(256, np.uint32)
    module.call("run_words", [words, hist, n])
    assert np.array_equal(hist, np.bincount(words.view(np.uint8), minlength=256))


@pytest.mark.parametrize("n, nbins", [(1, 1), (999, 10), (4099, 1000), (3001, 12288), (3001, 12289), (5000, 20000)])
def test_float_bins_static_size_and_fallback(module, n: int, nbins: int) -> None:
    """Up to HIST_SMEM_BINS (12288 4-byte words) in shared memory, beyond that the original atomics."""
    x = np.random.default_rng(nbins).random(n, dtype=np.float32)
    hist = np.zeros(nbins, np.uint32)
    module.call("run_floats", [x, hist, n, nbins])
    bins = np.minimum((x * np.float32(nbins)).astype(np.int32), nbins - 1)
    assert np.array_equal(hist, np.bincount(bins, minlength=nbins))


@pytest.mark.parametrize("n", [3, 777, 65537])
def test_weights_and_checked_bins(module, n: int) -> None:
    rng = np.random.default_rng(n)
    k = rng.integers(0, 1 << 20, n).astype(np.int32)
    w = np.ones(n, np.float32)  # counts of 1.0f: exact in any order
    hist = np.zeros(64, np.float32)
    module.call("run_weights", [k, w, hist, n])
    assert np.array_equal(hist, np.bincount(k & 63, minlength=64).astype(np.float32))
    w = rng.random(n, dtype=np.float32)  # other weights: equal up to rounding order
    hist = np.zeros(64, np.float32)
    module.call("run_weights", [k, w, hist, n])
    assert np.allclose(hist, np.bincount(k & 63, weights=w, minlength=64), rtol=1e-4)
    for nbins in (37, 13000):  # 13000 8-byte words: beyond HIST_SMEM_BINS (6144): the fallback
        idx = rng.integers(-5, nbins + 5, n).astype(np.int32)  # some bins out of range: skipped
        hist = np.full(nbins, 3, np.uint64)
        seen = np.zeros(n, np.int32)
        module.call("run_checked", [idx, hist, seen, n, nbins])
        ok = idx[(idx >= 0) & (idx < nbins)]
        assert np.array_equal(hist, 3 + 2 * np.bincount(ok, minlength=nbins).astype(np.uint64))
        assert np.array_equal(seen, idx)


NEAR_MISSES = {
    "hist read": ("atomicAdd(&hist[d], 1);", "atomicAdd(&hist[d], 1); if (hist[0] > 5) hist[1] = 0;"),
    "value used": ("atomicAdd(&hist[d], 1);", "int old = atomicAdd(&hist[d], 1); (void)old;"),
    "unbounded bin": ("int d = x[i] % 10;", "int d = x[i];"),
    "% not the outermost operation": ("int d = x[i] % 10;", "int d = 1 + x[i] % 10;"),
    "& not the outermost operation": ("int d = x[i] % 10;", "int d = x[i] | x[i] & 7;"),
    "lower bound only": ("int d = x[i] % 10;", "int d = x[i]; if (d >= 0)"),
    "two atomics": ("atomicAdd(&hist[d], 1);", "atomicAdd(&hist[d], 1); atomicAdd(&hist[0], 1);"),
    "return in the body": ("int d = x[i] % 10;", "if (x[i] < 0) return; int d = x[i] % 10;"),
    "thread index in the body": ("int d = x[i] % 10;", "int d = (x[i] + threadIdx.x) % 10;"),
    "bin changed later": ("atomicAdd(&hist[d], 1);", "d += 1; atomicAdd(&hist[d], 1);"),
    "bin changed after its check": ("atomicAdd(&hist[d], 1);",
                                    "if (d < 10) { d = d + 5; atomicAdd(&hist[d], 1); }"),
    "checked bin read from a written array": ("int d = x[i] % 10;\n    atomicAdd(&hist[d], 1);",
                                              "if (y[i] < 10) { y[i] += 3; atomicAdd(&hist[y[i]], 1); }"),
    "clamp not dominating": ("atomicAdd(&hist[d], 1);", "if (x[i] > 3) { if (d > 9) d = 9; } atomicAdd(&hist[d], 1);"),
    "too many static bins": ("x[i] % 10", "x[i] % 20000"),
    "bins not int parameter": ("x[i] % 10", "x[i] % x[0]"),
    "grid does not cover": ("<<<(n + 63) / 64, 64>>>", "<<<(n / 2 + 63) / 64, 64>>>"),
    "offset histogram": ("(x, hist, n, y);", "(x, hist + 1, n, y);"),
    "dynamic shared memory": ("<<<(n + 63) / 64, 64>>>", "<<<(n + 63) / 64, 64, 256>>>"),
    "shared memory already": ("int d = x[i] % 10;", "__shared__ int t[1]; int d = x[i] % 10;"),
    "barrier": ("int d = x[i] % 10;", "int d = x[i] % 10; __syncthreads();"),
    "atomicMax": ("atomicAdd(&hist[d], 1);", "atomicMax(&hist[d], 1);"),
    "const histogram": ("int* hist, int n, int* y) {", "const int* hist, int n, int* y) {"),
}

DIGITS = """\
__global__ void h_digits(const int* x, int* hist, int n, int* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int d = x[i] % 10;
    atomicAdd(&hist[d], 1);
}

extern "C" void run_digits(const int* x, int* hist, int n, int* y) {
    h_digits<<<(n + 63) / 64, 64>>>(x, hist, n, y);
}
"""


def test_digits_alone_is_edited() -> None:
    assert len(privatize_histogram_edits(DIGITS)) == 1


@pytest.mark.parametrize("case", sorted(NEAR_MISSES))
def test_refusals(case: str) -> None:
    old, new = NEAR_MISSES[case]
    assert old in DIGITS
    assert privatize_histogram_edits(DIGITS.replace(old, new)) == []


@pytest.mark.nvcc
def test_edits_compile_with_nvcc() -> None:
    from veriforge.cuda.toolchain.compiler import compile as nvcc_compile

    edited, _ = _all_edited(KERNELS)
    nvcc_compile(edited, arch="sm_90")  # raises when it does not compile


def test_search_finds_the_privatised_digit_histogram(tmp_path) -> None:
    """A user's digit histogram through the user-kernel path: the search keeps the edit, faster by the estimate."""
    from veriforge.core.store import RunStore
    from veriforge.optiml.operators import BuiltinProposer
    from veriforge.optiml.user_kernel import build_user_task
    from veriforge.optiml.xsearch import XSearchSettings, optimize

    kernel = tmp_path / "digits.cu"
    kernel.write_text(DIGITS.split("extern")[0])
    task = build_user_task(kernel, "h_digits", "(n + 255) / 256", "256", {"n": "100003"}, {"hist": "10", "y": "1"},
                           inits={"x": "randint(0, 1000)"})
    result = optimize(resolved=(task.spec, task.start, task.label),
                      settings=XSearchSettings(max_evaluations=2, final_top_k=0, heldout=False),
                      proposers=[BuiltinProposer(["privatize_histogram"])], store=RunStore(tmp_path / "runs.sqlite"))
    assert "__shared__ int s_hist[10];" in result.best.state.source
    assert result.speedup > 1.5, (result.start_time, result.best_time)
    print(f"digit histogram: {result.start_time * 1e6:.2f} us -> {result.best_time * 1e6:.2f} us")
