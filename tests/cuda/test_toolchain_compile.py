"""toolchain.compile with the real nvcc: resources, PTX, cache hits/misses, error mapping, limits.

Real compiles are few (about five, ~3 s): the module-scoped fixture compiles the recorded kernel
file once and the cache tests replace the subprocess layer to prove what is (not) run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from veriforge.cuda import toolchain
from veriforge.cuda.toolchain import compiler as compiler_mod
from veriforge.cuda.toolchain.cache import ArtifactCache
from veriforge.cuda.toolchain.resources import parse_ptxas_verbose

DATA = Path(__file__).parent / "data"
KERNELS = (DATA / "resources_kernels.cu").read_text()
WARN_KERNEL = "\n__global__ void warn_me(float* o) {\n    int unused = 3;\n    o[0] = 1.f;\n}\n"
SOURCE = KERNELS + WARN_KERNEL
WARN_LINE = len(KERNELS.splitlines()) + 3  # line of `int unused` in SOURCE


class NvccCalled(Exception):
    """Raised by the patched process runner: proves compile() went to nvcc (a cache miss)."""


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return ArtifactCache(tmp_path_factory.mktemp("nvcc-cache"))


@pytest.fixture(scope="module")
def compiled(shared_cache):
    return toolchain.compile(
        SOURCE, arch="sm_80", flags=["-maxrregcount=32"], filename="examples/kernels.cu", cache=shared_cache
    )


@pytest.fixture
def forbid_nvcc(monkeypatch):
    calls: list[list[str]] = []

    def fake_run(cmd, *args, **kwargs):
        calls.append(list(cmd))
        raise NvccCalled(cmd[0])

    # nvcc runs through the sandbox (compiler._run): intercept it there.
    monkeypatch.setattr(compiler_mod, "_run", fake_run)
    return calls


@pytest.mark.nvcc
def test_cubin_and_resources_match_ptxas(compiled):
    assert not compiled.cached and compiled.output == "cubin" and compiled.arch == "sm_80"
    assert compiled.artifact.startswith(b"\x7fELF")
    assert compiled.path.read_bytes() == compiled.artifact and compiled.path.suffix == ".cubin"
    # The same numbers the recorded sm_80 log has (same compiler, same flags).
    recorded = parse_ptxas_verbose((DATA / "ptxas_maxrreg32_sm_80.log").read_text())
    for name, rec in recorded.items():
        got = compiled.resources[name]
        assert (got.registers, got.smem_static_bytes, got.barriers, got.spill_store_bytes) == (
            rec.registers,
            rec.smem_static_bytes,
            rec.barriers,
            rec.spill_store_bytes,
        )
    assert compiled.kernel("matmul_tiled").registers == 31
    assert compiled.kernel("reduce_sum<256, float>").smem_static_bytes == 1024
    assert compiled.kernel("spiller").spills
    assert compiled.kernel("warn_me").registers > 0
    assert list(compiled.device_functions) == ["helper(float, int)"]
    assert "-maxrregcount=32" in compiled.command and compiled.compiler_version


@pytest.mark.nvcc
def test_warnings_are_kept_on_success_with_the_users_file_and_line(compiled):
    (warning,) = compiled.warnings
    assert (warning.file, warning.line, warning.column) == ("examples/kernels.cu", WARN_LINE, 9)
    assert "unused" in warning.message
    assert f"examples/kernels.cu({WARN_LINE}): warning" in compiled.log


@pytest.mark.nvcc
def test_second_compile_is_a_cache_hit_without_nvcc(compiled, shared_cache, forbid_nvcc):
    again = toolchain.compile(
        SOURCE, arch="sm_80", flags=["-maxrregcount=32"], filename="examples/kernels.cu", cache=shared_cache
    )
    assert forbid_nvcc == []
    assert again.cached and again.artifact == compiled.artifact and again.path == compiled.path
    assert again.resources == compiled.resources and again.diagnostics == compiled.diagnostics
    assert again.kernel("spiller").spill_load_bytes == compiled.kernel("spiller").spill_load_bytes


@pytest.mark.nvcc
@pytest.mark.parametrize(
    "change",
    [
        {"flags": ["-maxrregcount=40"]},
        {"arch": "sm_86"},
        {"source": SOURCE + "\n// edited\n"},
        {"output": "ptx"},
        {"defines": {"TILE_EXTRA": 1}},
    ],
)
def test_any_change_misses_the_cache(compiled, shared_cache, forbid_nvcc, change):
    args = {"source": SOURCE, "arch": "sm_80", "flags": ["-maxrregcount=32"], "filename": "examples/kernels.cu"}
    args.update(change)
    source = args.pop("source")
    with pytest.raises(NvccCalled):
        toolchain.compile(source, cache=shared_cache, **args)
    assert len(forbid_nvcc) == 1 and Path(forbid_nvcc[0][0]).name == "nvcc"


@pytest.mark.nvcc
def test_ptx_output_also_gets_resources(shared_cache):
    res = toolchain.compile(KERNELS, arch="sm_90", output="ptx", cache=shared_cache)
    assert ".target sm_90" in res.ptx and res.path.suffix == ".ptx"
    assert res.kernel("matmul_tiled").arch == "sm_90"
    assert res.kernel("matmul_tiled").smem_static_bytes == 2048
    assert res.kernel("spiller").registers > 32  # no cap here
    assert any(Path(c).name == "ptxas" for c in res.command)
    with pytest.raises(ValueError, match="cubin"):
        _ = toolchain.compile(
            SOURCE, arch="sm_80", flags=["-maxrregcount=32"], filename="examples/kernels.cu", cache=shared_cache
        ).ptx


@pytest.mark.nvcc
def test_compile_error_maps_to_the_users_file(shared_cache):
    source = "__global__ void k(float* o) {\n    o[0] = undefined_thing;\n}\n"
    with pytest.raises(toolchain.NvccCompileError) as err:
        toolchain.compile(source, filename="/home/me/proj/broken.cu", cache=shared_cache)
    exc = err.value
    (d,) = exc.errors
    assert (d.file, d.line, d.column, d.severity) == ("/home/me/proj/broken.cu", 2, 12, "error")
    assert 'identifier "undefined_thing" is undefined' in d.message
    assert str(exc).startswith("/home/me/proj/broken.cu:2:12: error:")
    assert "veriforge-nvcc-" not in exc.log and "/home/me/proj/broken.cu(2)" in exc.log
    assert exc.returncode != 0


@pytest.mark.nvcc
def test_include_dirs_defines_and_header_edits(tmp_path, shared_cache, monkeypatch):
    (tmp_path / "params.h").write_text("#define SCALE 2.0f\n")
    source = (
        '#include "params.h"\n#ifndef BLOCK\n#error BLOCK must be defined\n#endif\n'
        "__global__ void scale(float* x) { __shared__ float s[BLOCK]; s[threadIdx.x] = x[threadIdx.x] * SCALE;"
        " __syncthreads(); x[threadIdx.x] = s[BLOCK - 1 - threadIdx.x]; }\n"
    )
    res = toolchain.compile(source, include_dirs=[tmp_path], defines={"BLOCK": 128}, cache=shared_cache)
    assert res.kernel("scale").smem_static_bytes == 512 and res.kernel("scale").barriers == 1
    # Editing a user header changes the cache key even though the source did not change.
    (tmp_path / "params.h").write_text("#define SCALE 3.0f\n")
    monkeypatch.setattr(compiler_mod, "_run", _raise_called)
    with pytest.raises(NvccCalled):
        toolchain.compile(source, include_dirs=[tmp_path], defines={"BLOCK": 128}, cache=shared_cache)


def _raise_called(cmd, *args, **kwargs):
    raise NvccCalled(cmd[0])


@pytest.mark.nvcc
def test_timeout_kills_nvcc(shared_cache):
    with pytest.raises(toolchain.CompileTimeoutError, match="limit"):
        toolchain.compile(KERNELS + "\n// t\n", arch="sm_75", timeout=0.05, cache=shared_cache)


@pytest.mark.nvcc
def test_bad_arguments_fail_before_nvcc(forbid_nvcc):
    with pytest.raises(toolchain.InvalidArchError, match="sm_91"):
        toolchain.compile(KERNELS, arch="sm_91")
    for flag in ["-o", "--output-file=x", "-arch=sm_80", "-ptx", "-gencode=arch=compute_80,code=sm_80"]:
        with pytest.raises(toolchain.InvalidFlagsError, match="controlled by compile"):
            toolchain.compile(KERNELS, flags=[flag])
    with pytest.raises(toolchain.InvalidFlagsError, match="macro name"):
        toolchain.compile(KERNELS, defines={"bad name": 1})
    with pytest.raises(toolchain.InvalidFlagsError, match="output"):
        toolchain.compile(KERNELS, output="fatbin")
    assert forbid_nvcc == []
