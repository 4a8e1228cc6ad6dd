"""Every abnormal end of a C→CUDA candidate's process is a crash verdict naming its cause (issue 19,
part 2): a signal, an abort, an early exit with status 0, a forged result file. None is ever CORRECT,
and the CPU runtime's internal names never reach the user."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from veriforge.cli.eval_cmd import eval_cmd
from veriforge.cuda.evaluate.backend import describe_exit
from veriforge.cuda.evaluate.driver import CHECK_MAGIC
from veriforge.cuda.evaluate.harness import evaluate

AXPY = Path(__file__).parents[1] / "tasks" / "data" / "c2cuda" / "vec_scale_add"

TEMPLATE = r'''
#include <cstdlib>
__global__ void k(const float* x, const float* y, float* out, float alpha, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    KERNEL
    if (i < n) out[i] = alpha * x[i] + y[i];
}
extern "C" void solve(const float* x, const float* y, float* out, float alpha, int n) {
    k<<<(n + 127) / 128, 128>>>(x, y, out, alpha, n);
    cudaDeviceSynchronize();
    HOST
}
'''


def _candidate(host: str = "", kernel: str = "") -> str:
    return TEMPLATE.replace("HOST", host).replace("KERNEL", kernel)


def test_the_template_itself_is_correct() -> None:
    res = evaluate(AXPY, _candidate(), estimate=False, configs=["small"])
    assert res.verdict.correct, res.verdict.reason


@pytest.mark.parametrize(("host", "kernel", "label"), [
    ("int* volatile p = nullptr; *p = 42;", "", "SIGSEGV"),  # opaque to the compiler
    ("int* p = nullptr; *p = 42;", "", None),  # compiler-visible: SIGSEGV, or SIGILL where it becomes a trap
    ("abort();", "", "SIGABRT"),
    ("_Exit(0);", "", "exit status 0"),  # an early, "successful" exit before any result
    ("quick_exit(0);", "", "exit status 0"),
    ("if (n > 1000) { int* volatile p = nullptr; *p = 1; }", "", "SIGSEGV"),  # only the last configuration
    ("", "if (i == 0) exit(0);", "exit status 0"),  # exit from a kernel
])
def test_an_abnormal_end_is_a_crash_verdict_naming_its_cause(host: str, kernel: str, label: str | None) -> None:
    configs = None if "n > 1000" in host else ["small"]  # one configuration is enough, except there
    res = evaluate(AXPY, _candidate(host, kernel), estimate=False, configs=configs)
    assert not res.verdict.correct and res.verdict.compiled and not res.verdict.rejected
    assert res.details["status"] == "crash", res.verdict.reason
    if label is None:
        assert res.details["crash"] in ("SIGSEGV", "SIGILL", "SIGBUS"), res.details
    else:
        assert res.details["crash"] == label, res.verdict.reason
        assert label.replace("exit status 0", "status 0") in res.verdict.reason


def test_every_way_a_process_ends_is_named() -> None:
    """How AddressSanitizer (``memcheck=True``) reports a fault: exit status 1 and a report; the
    verdict names the signal it caught. (A real ASan run builds a runtime variant: minutes.)"""
    asan = ("AddressSanitizer:DEADLYSIGNAL\n=================================================================\n"
            "==42==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000 (pc 0x55d0 bp 0x7ffc sp 0x7ffc "
            "T0)\n==42==The signal is caused by a WRITE memory access.\n")
    assert describe_exit(1, asan)[0] == "SIGSEGV"
    overflow = "==7==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000014\n"
    assert describe_exit(1, overflow) == ("heap-buffer-overflow", "was stopped by AddressSanitizer: "
                                          "heap-buffer-overflow (exit status 1)")
    assert describe_exit(-6) == ("SIGABRT", "was killed by SIGABRT (signal 6)")
    assert describe_exit(0)[0] == "exit status 0" and "before writing every result" in describe_exit(0)[1]
    assert describe_exit(7) == ("exit status 7", "exited with status 7")
    assert describe_exit(None)[0] == "lost"


FORGER = r'''
#include <cstdio>
#include <cstdint>
#include <cstdlib>
__global__ void k() {}
extern "C" void solve(const float* x, const float* y, float* out, float alpha, int n) {
    // Computes every case's right answer on the host from the harness's input files, writes result
    // and checks files in the driver's format for all of them, then leaves before the driver can.
    for (int c = 0; ; ++c) {
        char name[64]; snprintf(name, sizeof name, "case%d.in", c);
        FILE* f = fopen(name, "rb"); if (!f) break;
        uint64_t nb; fread(&nb, 8, 1, f); float* hx = (float*)malloc(nb); fread(hx, 1, nb, f);
        fread(&nb, 8, 1, f); float* hy = (float*)malloc(nb); fread(hy, 1, nb, f);
        fread(&nb, 8, 1, f); fseek(f, (long)nb, SEEK_CUR);
        float a; int m; fread(&a, 4, 1, f); fread(&m, 4, 1, f); fclose(f);
        for (int i = 0; i < m; ++i) hy[i] = a * hx[i] + hy[i];
        snprintf(name, sizeof name, "case%d.out.chk", c); f = fopen(name, "wb");
        uint64_t chk[5] = {MAGICull, 0, 0, 0, 12345}; fwrite(chk, 8, 5, f); fclose(f);
        snprintf(name, sizeof name, "case%d.out", c); f = fopen(name, "wb");
        double s = 1e-6; fwrite(&s, 8, 1, f); fwrite(hy, 4, m, f); fclose(f);
    }
    _Exit(0);
}
'''


def test_forged_result_files_and_an_early_exit_are_never_correct(monkeypatch: pytest.MonkeyPatch) -> None:
    """The static anti-cheat refuses file access; with it out of the way (a bypass found tomorrow),
    the run's token still tells the driver's result files from forged ones."""
    from veriforge.cuda.evaluate import anticheat_c

    forger = FORGER.replace("MAGIC", hex(CHECK_MAGIC))
    assert evaluate(AXPY, forger, estimate=False).verdict.rejected  # first line of defence
    monkeypatch.setattr(anticheat_c, "scan_c", lambda source, spec: [])
    res = evaluate(AXPY, forger, estimate=False, configs=["small"])
    assert not res.verdict.correct, res.verdict.reason
    assert "token" in res.verdict.reason


def test_an_integer_cast_to_a_volatile_pointer_compiles_on_the_host() -> None:
    """Host code is not rewritten for warp lockstep: ``(volatile int*)address`` is ordinary C++."""
    res = evaluate(AXPY, _candidate("volatile int* q = (volatile int*)(size_t)n; if (n < 0) *q = 1;"),
                   estimate=False, configs=["small"])
    assert res.verdict.correct, res.verdict.reason
    res = evaluate(AXPY, _candidate("volatile int* q = (volatile int*)0; *q = 1;"), estimate=False,
                   configs=["small"])
    assert res.details["status"] == "crash" and res.details["crash"] == "SIGSEGV", res.verdict.reason


def test_device_volatile_casts_work_and_errors_never_name_runtime_internals() -> None:
    kernel = "volatile float* q = (volatile float*)(size_t)out; if (i < n) q[i] = 0.0f;"
    res = evaluate(AXPY, _candidate(kernel=kernel), estimate=False, configs=["small"])
    assert res.verdict.correct, res.verdict.reason  # from an integer, as a GPU compiler allows
    res = evaluate(AXPY, _candidate(kernel="volatile float* q = (volatile float*)1.5f; if (i < 0) *q = 1;"),
                   estimate=False, configs=["small"])
    assert not res.verdict.compiled
    assert "volatile float*" in res.verdict.reason, res.verdict.reason
    for internal in ("vf::", "LockstepPtr", "vf_volatile"):
        assert internal not in res.verdict.reason


def test_public_message_maps_rewritten_names_back() -> None:
    from veriforge.cuda.cpu.build import public_message

    assert public_message("no matching function for call to 'vf::LockstepPtr<int>::LockstepPtr(size_t)'") == \
        "invalid conversion from 'size_t' to 'volatile int*'"
    assert public_message("'vf_volatile_buf' has no member; see ::vf::detail::step<float>") == \
        "'buf' has no member; see <CPU-runtime internal>"


def test_eval_cli_says_crashed_with_the_signal(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command("eval")(eval_cmd)
    app.command("noop")(lambda: None)
    cand = tmp_path / "null_write.cu"
    cand.write_text(_candidate("int* volatile p = nullptr; *p = 42;"))
    res = CliRunner().invoke(app, ["eval", str(AXPY), str(cand), "--no-cache"])
    assert res.exit_code == 1
    assert res.output.splitlines()[0].startswith("vec_scale_add: CRASHED (SIGSEGV)"), res.output
    assert "CORRECT" not in res.output.splitlines()[0]


def test_a_crash_after_every_result_was_written_is_still_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """A global's destructor faults at exit (the static anti-cheat refuses file-scope state; with it
    out of the way the results are all on disk, and the verdict is still a crash)."""
    from veriforge.cuda.evaluate import anticheat_c

    monkeypatch.setattr(anticheat_c, "scan_c", lambda source, spec: [])
    src = "struct Boom { ~Boom() { int* volatile p = nullptr; *p = 1; } };\nBoom boom;\n" + _candidate()
    res = evaluate(AXPY, src, estimate=False, configs=["small"])
    assert not res.verdict.correct and res.details["crash"] == "SIGSEGV", res.verdict.reason
