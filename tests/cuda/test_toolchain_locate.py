"""Finding nvcc: search order, PyPI wheel layouts, clear errors (fake nvcc scripts + the real one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from veriforge.cuda.toolchain import locate
from veriforge.cuda.toolchain.locate import describe, find_toolchain, parse_nvcc_version
from veriforge.errors import ToolchainNotFoundError

FAKE_NVCC = """#!/bin/sh
here="${0%/*}"
case "$*" in
  *--version*) echo "nvcc: NVIDIA (R) Cuda compiler driver"; echo "Cuda compilation tools, release RELEASE, VFULL" ;;
  *--dryrun*) echo "#\\$ _HERE_=$here" >&2; echo "#\\$ TOP=$here/.." >&2;
              echo "#\\$ INCLUDES=\\"-I$here/../include\\"  " >&2 ;;
  *--list-gpu-code*) echo sm_75; echo sm_80; echo sm_90 ;;
esac
"""


def make_fake_cuda(bin_dir: Path, full: str = "13.5.37", include: Path | None = None) -> Path:
    """A directory laid out like a CUDA install, whose nvcc answers --version/--dryrun like the real one."""
    bin_dir.mkdir(parents=True)
    release = ".".join(full.split(".")[:2])
    nvcc = bin_dir / "nvcc"
    nvcc.write_text(FAKE_NVCC.replace("RELEASE", release).replace("FULL", full))
    nvcc.chmod(0o755)
    ptxas = bin_dir / "ptxas"
    ptxas.write_text("#!/bin/sh\nexit 0\n")
    ptxas.chmod(0o755)
    inc = include if include is not None else bin_dir.parent / "include"
    inc.mkdir(parents=True, exist_ok=True)
    (inc / "cuda_runtime.h").write_text("/* fake */\n")
    return nvcc


@pytest.fixture
def bare_env(tmp_path, monkeypatch):
    """No nvcc anywhere: empty PATH, no CUDA_* variables, no default roots, no wheels."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    for var in ("CUDA_HOME", "CUDA_PATH", "VERIFORGE_NVCC"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(locate, "DEFAULT_ROOTS", ())
    monkeypatch.setattr(sys, "path", [p for p in sys.path if "site-packages" not in p])
    return tmp_path


def test_parse_nvcc_version():
    text = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n"
    assert parse_nvcc_version(text) == ("13.0.88", (13, 0))
    with pytest.raises(ToolchainNotFoundError, match="could not read"):
        parse_nvcc_version("garbage")


def test_nothing_found_gives_install_instructions(bare_env):
    with pytest.raises(ToolchainNotFoundError) as err:
        find_toolchain()
    assert "pip install 'veriforge[cuda]'" in str(err.value)
    info = describe()
    assert info["found"] is False and "veriforge[cuda]" in info["install"]


def test_cuda13_wheel_layout_is_found(bare_env, monkeypatch):
    site = bare_env / "lib" / "site-packages"
    nvcc = make_fake_cuda(site / "nvidia" / "cu13" / "bin")
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    tc = find_toolchain()
    assert tc.nvcc == nvcc and tc.source == "pip wheel nvidia-cuda-nvcc"
    assert (tc.version, tc.release) == ("13.5.37", (13, 5))
    assert tc.ptxas == nvcc.parent / "ptxas"
    assert tc.cuda_home == (site / "nvidia" / "cu13").resolve()
    assert (site / "nvidia" / "cu13" / "include").resolve() in tc.include_dirs
    assert tc.gpu_codes == ("sm_75", "sm_80", "sm_90")
    # Without the nvidia-cuda-cccl wheel, half/bfloat16 headers cannot compile: doctor says so.
    info = describe()
    assert info["found"] and info["source"] == "pip wheel nvidia-cuda-nvcc"
    assert len(info["problems"]) == 1 and "nvidia-cuda-cccl" in info["problems"][0]
    (site / "nvidia" / "cu13" / "include" / "nv").mkdir()
    (site / "nvidia" / "cu13" / "include" / "nv" / "target").write_text("// fake\n")
    assert describe()["problems"] == []


def test_cuda12_wheel_takes_headers_from_the_runtime_wheel(bare_env, monkeypatch):
    site = bare_env / "lib" / "site-packages"
    runtime_inc = site / "nvidia" / "cuda_runtime" / "include"
    nvcc = make_fake_cuda(site / "nvidia" / "cuda_nvcc" / "bin", "12.4.131", include=site / "nvidia" / "x")
    (site / "nvidia" / "x" / "cuda_runtime.h").unlink()
    runtime_inc.mkdir(parents=True)
    (runtime_inc / "cuda_runtime.h").write_text("/* fake */\n")
    monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    tc = find_toolchain()
    assert tc.nvcc == nvcc and tc.release == (12, 4)
    assert runtime_inc.resolve() in tc.include_dirs


def test_search_order_explicit_then_cuda_home_then_path(bare_env, monkeypatch):
    on_path = make_fake_cuda(bare_env / "pathcuda" / "bin", "12.1.66")
    home = make_fake_cuda(bare_env / "homecuda" / "bin", "12.8.93")
    chosen = make_fake_cuda(bare_env / "chosen" / "bin", "13.0.88")
    monkeypatch.setenv("PATH", f"{on_path.parent}{os.pathsep}{os.environ['PATH']}")
    assert find_toolchain().source == "PATH"
    monkeypatch.setenv("CUDA_HOME", str(home.parent.parent))
    tc = find_toolchain()
    assert (tc.source, tc.version) == ("CUDA_HOME", "12.8.93")
    monkeypatch.setenv("VERIFORGE_NVCC", str(chosen.parent.parent))  # a CUDA root works too
    assert find_toolchain().version == "13.0.88"
    assert find_toolchain(on_path).source == "argument"


def test_an_explicit_path_that_is_wrong_does_not_fall_back(bare_env, monkeypatch):
    make_fake_cuda(bare_env / "pathcuda" / "bin")
    monkeypatch.setenv("PATH", str(bare_env / "pathcuda" / "bin"))
    with pytest.raises(ToolchainNotFoundError, match=r"argument: .*nope.* does not exist"):
        find_toolchain(bare_env / "nope" / "nvcc")


def test_a_broken_candidate_is_reported_and_skipped(bare_env, monkeypatch):
    broken = bare_env / "broken" / "bin"
    broken.mkdir(parents=True)
    (broken / "nvcc").write_text("#!/bin/sh\necho no version here\n")
    (broken / "nvcc").chmod(0o755)
    good = make_fake_cuda(bare_env / "good" / "bin")
    monkeypatch.setenv("CUDA_HOME", str(broken.parent))
    monkeypatch.setenv("PATH", str(good.parent))
    assert find_toolchain().nvcc == good
    monkeypatch.setenv("PATH", str(bare_env))
    with pytest.raises(ToolchainNotFoundError, match=r"CUDA_HOME: .*broken.*could not read the nvcc version"):
        find_toolchain()


@pytest.mark.nvcc
def test_real_toolchain():
    tc = find_toolchain()
    out = subprocess.run([str(tc.nvcc), "--version"], capture_output=True, text=True).stdout
    assert f"V{tc.version}" in out
    assert tc.ptxas.is_file() and os.access(tc.ptxas, os.X_OK)
    assert any((d / "cuda_runtime.h").is_file() for d in tc.include_dirs)
    assert {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90"} <= set(tc.gpu_codes)
    info = describe()
    assert info["found"] is True and info["version"] == tc.version and info["ptxas"] == str(tc.ptxas)
    assert info["problems"] == []
