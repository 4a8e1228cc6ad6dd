"""`veriforge cuda compile|run` through typer's CliRunner (real nvcc, real CPU runtime)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veriforge.cli.cuda import app

runner = CliRunner()

KERNELS = """\
#include "tile.h"
#ifndef SCALE
#error SCALE must be defined
#endif
__global__ void tiled_copy(const float* in, float* out) {
    __shared__ float tile[TILE][TILE];
    tile[threadIdx.y][threadIdx.x] = in[threadIdx.y * TILE + threadIdx.x] * SCALE;
    __syncthreads();
    out[threadIdx.x * TILE + threadIdx.y] = tile[threadIdx.y][threadIdx.x];
}
template <int N> __global__ void fill(int* out) { out[threadIdx.x] = N; }
template __global__ void fill<7>(int*);
"""

BROKEN = """\
__global__ void k(float* o) {
    int unused = 1;
    o[0] = undefined_thing;
}
"""


@pytest.fixture
def kernel_file(tmp_path: Path) -> Path:
    (tmp_path / "tile.h").write_text("#define TILE 16\n")  # found because the file's folder is searched
    path = tmp_path / "kernels.cu"
    path.write_text(KERNELS)
    return path


@pytest.mark.nvcc
def test_compile_prints_a_resources_table_then_json_from_the_cache(kernel_file, tmp_path):
    out = tmp_path / "k.cubin"
    args = ["compile", str(kernel_file), "--arch", "sm_80", "-D", "SCALE=2.0f"]
    res = runner.invoke(app, [*args, "--flag", "-lineinfo -Xptxas -O3", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "tiled_copy" in res.output and "fill<7>" in res.output and "sm_80" in res.output
    row = next(line for line in res.output.splitlines() if "tiled_copy" in line)
    assert "1024" in row  # 16*16 floats of static shared memory
    assert out.read_bytes().startswith(b"\x7fELF")

    # The same flags given one by one: same cache entry.
    flags = ["--flag=-lineinfo", "--flag", "-Xptxas", "--flag", "-O3"]
    res = runner.invoke(app, [*args, *flags, "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["ok"] and report["cached"] and report["arch"] == "sm_80"
    assert report["flags"] == ["-lineinfo", "-Xptxas", "-O3"]
    kernels = {k["short_name"]: k for k in report["kernels"]}
    assert kernels["tiled_copy"]["smem_static_bytes"] == 1024 and kernels["tiled_copy"]["barriers"] == 1
    assert kernels["fill<7>"]["registers"] > 0


@pytest.mark.nvcc
def test_compile_errors_are_printed_with_the_users_path_and_exit_1(tmp_path):
    path = tmp_path / "broken.cu"
    path.write_text(BROKEN)
    res = runner.invoke(app, ["compile", str(path)])
    assert res.exit_code == 1
    lines = res.output.splitlines()
    assert f'{path}:3:12: error: identifier "undefined_thing" is undefined' in lines
    assert f'{path}:2:9: warning: variable "unused" was declared but never referenced' in lines
    assert "Traceback" not in res.output

    res = runner.invoke(app, ["compile", str(path), "--json"])
    assert res.exit_code == 1
    report = json.loads(res.stdout)
    assert report["ok"] is False and report["kind"] == "compile"
    errors = [d for d in report["diagnostics"] if d["severity"] == "error"]
    assert [(d["file"], d["line"], d["column"]) for d in errors] == [(str(path), 3, 12)]


@pytest.mark.nvcc
def test_ptx_output_and_bad_arch(kernel_file, tmp_path):
    out = tmp_path / "k.ptx"
    res = runner.invoke(app, ["compile", str(kernel_file), "--ptx", "-a", "sm_75", "-D", "SCALE=1", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert ".target sm_75" in out.read_text() and "tiled_copy" in res.output
    res = runner.invoke(app, ["compile", str(kernel_file), "--arch", "sm_91"])
    assert res.exit_code == 2 and "sm_91" in res.output and "choose one of" in res.output


def test_missing_toolchain_exits_2_with_install_instructions(kernel_file, monkeypatch, tmp_path):
    monkeypatch.setenv("VERIFORGE_NVCC", str(tmp_path / "no-such-nvcc"))
    res = runner.invoke(app, ["compile", str(kernel_file)])
    assert res.exit_code == 2
    assert "pip install 'veriforge[cuda]'" in res.output
    res = runner.invoke(app, ["compile", str(kernel_file), "--json"])
    assert res.exit_code == 2 and json.loads(res.stdout)["kind"] == "toolchain"


def test_bad_define_or_flag_is_a_usage_error(kernel_file):
    res = runner.invoke(app, ["compile", str(kernel_file), "-D", "=3"])
    assert res.exit_code == 2 and "NAME=VALUE" in res.output
    res = runner.invoke(app, ["compile", str(kernel_file), "--flag", "'-O3"])
    assert res.exit_code == 2 and "No closing quotation" in res.output and "Traceback" not in res.output


PROGRAM = r"""
#include <cstdio>
#include <cstdlib>
__global__ void square(int* v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = v[i] * v[i];
}
int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4;
    int base = 0;
    if (scanf("%d", &base) != 1) base = 1;
    int h[64];
    for (int i = 0; i < n; ++i) h[i] = base + i;
    int* d;
    cudaMalloc(&d, n * sizeof(int));
    cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
    square<<<(n + 31) / 32, 32>>>(d, n);
    cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(d);
    for (int i = 0; i < n; ++i) printf("%d ", h[i]);
    printf("\n");
    fprintf(stderr, "done\n");
    return h[n - 1] % 5;
}
"""


@pytest.fixture
def cpu_runtime(monkeypatch):
    """The real CPU runtime, run from a folder of its own. The test's own VERIFORGE_HOME links the
    session's content-addressed runtime cache (root conftest), so the runtime is built once per
    run, not once more here.

    ``cuda run`` lends its working folder to the sandbox uid; started from the checkout it would
    lend the whole repository while other tests read it, so each test runs from a fresh folder the
    sandbox uid can reach (pytest's own tmp folders are 0700)."""
    import shutil
    import tempfile

    cpu = pytest.importorskip("veriforge.cuda.cpu", reason="the CPU CUDA runtime is not built yet")
    if not hasattr(cpu, "run_program"):
        pytest.skip("veriforge.cuda.cpu has no run_program yet")
    cwd = Path(tempfile.mkdtemp(prefix="vf-cli-run-"))
    cwd.chmod(0o755)
    monkeypatch.chdir(cwd)
    yield cpu
    shutil.rmtree(cwd, ignore_errors=True)


def test_run_prints_the_programs_output_and_exits_with_its_code(cpu_runtime, tmp_path):
    prog = tmp_path / "square.cu"
    prog.write_text(PROGRAM)
    stdin = tmp_path / "in.txt"
    stdin.write_text("3\n")
    res = runner.invoke(app, ["run", str(prog), "--stdin", str(stdin), "--", "5"])
    expected = [(3 + i) ** 2 for i in range(5)]
    assert res.stdout.split() == [str(v) for v in expected]
    assert "done" in res.stderr
    assert res.exit_code == expected[-1] % 5 == 4


def test_run_reports_compile_errors_clearly(cpu_runtime, tmp_path):
    prog = tmp_path / "bad.cu"
    prog.write_text("int main() { return undefined_thing; }\n")
    res = runner.invoke(app, ["run", str(prog)])
    assert res.exit_code == 1
    assert "undefined_thing" in res.output and "Traceback" not in res.output


# --- how `run` maps run_program's outcomes to output and exit codes -------------------------
# These replace veriforge.cuda.cpu with a stand-in whose run_program returns/raises what the real
# runtime can (bytes or str output, a signal, a time-out, errors), because several of these
# outcomes are slow or awkward to provoke with real programs. The real runtime is exercised above.


class _Outcome:
    def __init__(self, returncode=0, stdout=b"", stderr=b"", timed_out=False):
        self.returncode, self.stdout, self.stderr, self.timed_out = returncode, stdout, stderr, timed_out


@pytest.fixture
def stand_in_runtime(monkeypatch):
    import types

    import veriforge.cuda

    calls: list[dict] = []
    module = types.ModuleType("veriforge.cuda.cpu")
    behaviour: dict = {}

    def run_program(source, argv=(), stdin=b"", timeout=60.0, *, filename="program.cu", cwd=None):
        calls.append({"source": source, "argv": argv, "stdin": stdin, "timeout": timeout, "filename": filename})
        if "raise" in behaviour:
            raise behaviour["raise"]
        return behaviour["result"]

    module.run_program = run_program
    monkeypatch.setitem(sys.modules, "veriforge.cuda.cpu", module)
    monkeypatch.setattr(veriforge.cuda, "cpu", module, raising=False)
    return calls, behaviour


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "prog.cu"
    path.write_text("int main() { return 0; }\n")
    return path


@pytest.mark.parametrize(
    ("result", "stdout", "stderr", "code"),
    [
        (_Outcome(3, b"out bytes\n", b"err bytes\n"), "out bytes\n", "err bytes\n", 3),
        (_Outcome(0, "out text\n", "err text\n"), "out text\n", "err text\n", 0),
        (_Outcome(-11, b"partial\n", b""), "partial\n", "", 139),
    ],
)
def test_run_output_and_exit_codes(stand_in_runtime, program, tmp_path, result, stdout, stderr, code):
    calls, behaviour = stand_in_runtime
    behaviour["result"] = result
    data = tmp_path / "stdin.bin"
    data.write_bytes(b"\x00\x01input")
    res = runner.invoke(app, ["run", str(program), "--stdin", str(data), "--timeout", "7", "--", "a", "--b"])
    assert (res.stdout, res.stderr, res.exit_code) == (stdout, stderr, code)
    expected_call = {"source": program.read_text(), "argv": ("a", "--b"), "stdin": b"\x00\x01input", "timeout": 7.0}
    assert calls == [expected_call | {"filename": "prog.cu"}]


def test_run_refuses_options_the_runtime_lacks(stand_in_runtime, program):
    calls, behaviour = stand_in_runtime
    behaviour["result"] = _Outcome()
    res = runner.invoke(app, ["run", str(program), "--sanitize"])
    assert res.exit_code == 2 and "does not support sanitize" in res.stderr and calls == []


def test_run_time_out_exits_124(stand_in_runtime, program):
    _, behaviour = stand_in_runtime
    behaviour["result"] = _Outcome(-9, b"", b"", timed_out=True)
    res = runner.invoke(app, ["run", str(program), "--timeout", "2"])
    assert res.exit_code == 124 and "ran past its 2 s limit" in res.stderr


def test_run_errors_are_clear_messages(stand_in_runtime, program):
    from veriforge.cuda.toolchain import Diagnostic
    from veriforge.errors import CompileError, KernelFault, ToolchainNotFoundError, UnsupportedFeatureError

    _, behaviour = stand_in_runtime
    cases = [
        (UnsupportedFeatureError("inline PTX (asm volatile) at line 3"), 1, "unsupported CUDA feature: inline PTX"),
        (
            CompileError("bad", [Diagnostic("/tmp/gone/k.cpp", 4, 2, "error", "expected ';'")]),
            1,
            f"{program}:4:2: error: expected ';'",
        ),
        (CompileError("no diagnostics here"), 1, f"{program}: error: no diagnostics here"),
        (KernelFault("deadlock in kernel 'k': barrier at line 9"), 1, "barrier at line 9"),
        (ToolchainNotFoundError("no C++ compiler"), 2, "no C++ compiler"),
    ]
    for exc, code, text in cases:
        behaviour["raise"] = exc
        res = runner.invoke(app, ["run", str(program)])
        assert res.exit_code == code, (exc, res.output)
        assert text in res.stderr and "Traceback" not in res.output


# --- `run` with several sources, -I/-D, --project, --timeout (the real runtime) ---------------

_HEADER = "#pragma once\n__global__ void twice(int* p, int n);\nconstexpr int BASE = FROM_D;\n"
_KERNEL = ('#include "lib.cuh"\n__global__ void twice(int* p, int n) {\n'
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) p[i] = 2 * (p[i] + BASE);\n}\n")
_MAIN = """#include <cstdio>
#include <lib.cuh>
int main(int argc, char** argv) {
    int h[4] = {1, 2, 3, 4}, *d;
    cudaMalloc(&d, sizeof h);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    twice << < 1, 4 >> > (d, 4);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("%d %d %s\\n", h[0], h[3], argc > 1 ? argv[1] : "-");
    return 0;
}
"""


@pytest.fixture
def two_files(monkeypatch):
    import shutil
    import tempfile

    # the program runs in the current directory, which the sandbox user must be able to reach
    tmp_path = Path(tempfile.mkdtemp(prefix="vf-cli-run-"))
    tmp_path.chmod(0o755)
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "lib.cuh").write_text(_HEADER)
    (tmp_path / "kern.cu").write_text(_KERNEL)
    (tmp_path / "main.cpp").write_text(_MAIN)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_run_several_sources_with_includes_and_defines(cpu_runtime, two_files):
    res = runner.invoke(app, ["run", "main.cpp", "kern.cu", "-I", "inc", "-D", "FROM_D=10", "--", "kern.cu"])
    assert res.exit_code == 0, res.output
    assert res.stdout == "22 28 kern.cu\n"   # a program argument after -- that names a file stays an argument
    entries = [{"directory": str(two_files), "file": f, "arguments": ["nvcc", "-arch=sm_90", "-Iinc", "-DFROM_D=0",
                                                                      "-c", f]} for f in ("main.cpp", "kern.cu")]
    (two_files / "compile_commands.json").write_text(json.dumps(entries))
    res = runner.invoke(app, ["run", "--project", "compile_commands.json"])
    assert res.exit_code == 0, res.output
    assert res.stdout == "2 8 -\n" and "note: -arch=sm_90: an nvcc-only option" in res.stderr


def test_run_project_errors_name_the_header(cpu_runtime, two_files):
    (two_files / "inc" / "lib.cuh").write_text(_HEADER.replace("FROM_D", "UNDEFINED_NAME"))
    res = runner.invoke(app, ["run", "main.cpp", "kern.cu", "-I", "inc"])
    assert res.exit_code == 1
    assert res.stderr.startswith("inc/lib.cuh:3:") and "UNDEFINED_NAME" in res.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "missing.cu"], "source file 'missing.cu' does not exist"),
        (["run", "main.cpp", "-I", "nowhere"], "include directory"),
        (["run", "main.cpp", "--flag", "-fplugin=x.so"], "is not allowed"),
        (["run", "main.cpp", "--timeout", "0"], "--timeout must be positive"),
        (["run", "--project", "missing.json"], "not a readable compile_commands.json"),
        (["run"], "give the program's source file(s)"),
    ],
)
def test_run_bad_input_is_one_line_and_exit_2(cpu_runtime, two_files, argv, message):
    res = runner.invoke(app, argv)
    assert res.exit_code == 2, res.output
    assert message in res.stderr and len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.output


def test_run_time_out_keeps_the_output(cpu_runtime, tmp_path):
    prog = tmp_path / "spin.cu"
    prog.write_text('#include <cstdio>\nint main() { printf("working\\n"); volatile int x = 0; for (;;) ++x; }\n')
    res = runner.invoke(app, ["run", str(prog), "--timeout", "1.5"])
    assert res.exit_code == 124
    assert res.stdout == "working\n" and "ran past its 1.5 s limit" in res.stderr


def test_compile_out_is_checked_before_compiling_and_locked(kernel_file, tmp_path, monkeypatch):
    """An --out that is a folder, or in an unwritable folder, fails at once with one line (exit 2)
    -- nvcc never runs; an --out another run is writing is refused with the holder named."""
    from veriforge.cli.preflight import OutputLock
    from veriforge.cuda import toolchain

    calls: list[str] = []
    monkeypatch.setattr(toolchain, "compile", lambda *a, **k: calls.append("nvcc"))  # must not be reached
    args = ["compile", str(kernel_file), "--arch", "sm_80", "-D", "SCALE=2.0f", "--out"]
    res = runner.invoke(app, [*args, str(tmp_path)])
    assert res.exit_code == 2 and "is a folder; name a file" in res.output
    blocked = tmp_path / "ro"
    blocked.mkdir()
    blocked.chmod(0o500)
    try:
        if not os.access(blocked, os.W_OK):  # root ignores modes
            res = runner.invoke(app, [*args, str(blocked / "k.cubin")])
            assert res.exit_code == 2 and "not writable" in res.output
    finally:
        blocked.chmod(0o700)
    target = tmp_path / "k.cubin"
    with OutputLock(target, command="another compile", is_file=True).acquire():
        res = runner.invoke(app, [*args, str(target)])
    assert res.exit_code == 2 and "another compile" in res.output
    assert calls == []
