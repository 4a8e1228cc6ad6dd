"""Candidates are linked with gold where it works (``build.fast_linker``): GNU ld took about a quarter
of a small kernel's compile. The choice is probed, so a machine without gold keeps the default."""

from __future__ import annotations

import shutil
import subprocess
import uuid

import numpy as np
import pytest

from veriforge.cuda.cpu import build


def test_no_gold_means_the_default_linker(monkeypatch):
    compiler = build.host_compiler().path
    build.fast_linker.cache_clear()
    monkeypatch.setattr(build.shutil, "which", lambda name: None)
    try:
        assert build.fast_linker(compiler) == ()
    finally:
        build.fast_linker.cache_clear()


def test_a_compiler_that_refuses_the_flag_keeps_the_default(tmp_path):
    build.fast_linker.cache_clear()
    refuses = tmp_path / "cc"
    refuses.write_text("#!/bin/sh\necho 'unrecognized -fuse-ld=gold' >&2\nexit 1\n")
    refuses.chmod(0o755)
    try:
        if shutil.which("ld.gold") is None:
            pytest.skip("no ld.gold here")
        assert build.fast_linker(str(refuses)) == ()
    finally:
        build.fast_linker.cache_clear()


@pytest.mark.skipif(shutil.which("ld.gold") is None or shutil.which("readelf") is None,
                    reason="needs ld.gold and readelf")
def test_a_compiled_module_is_linked_by_gold():
    from veriforge.cuda import cpu

    rt = build.runtime()
    assert rt.link_flags == ["-fuse-ld=gold"]
    text = f"// {uuid.uuid4()}: a fresh build, never a cached one\n" \
        "__global__ void twice_gold_probe(float* a, int n) { int i = threadIdx.x; if (i < n) a[i] *= 2; }\n"
    module = cpu.compile(text)
    try:
        a = np.arange(8, dtype=np.float32)
        module.launch("twice_gold_probe", grid=1, block=8, args=[a, 8])
        assert a.tolist() == [2.0 * v for v in range(8)]
        notes = subprocess.run(["readelf", "-n", str(module._exe)], capture_output=True, text=True).stdout
    finally:
        module.close()
    assert "NT_GNU_GOLD_VERSION" in notes
