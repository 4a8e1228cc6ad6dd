"""Tamper-proof build and output caches: a cached reference library, reference outputs or compiled
executable is used only if its signature verifies; anything else is rebuilt / recomputed.

Each test here uses a fresh VERIFORGE_HOME (not the session's shared build caches), so tampering
never leaks into other tests. The CPU-runtime tests build throwaway programs whose text is unique
to this file, in the shared runtime's ``bin/``.
"""

from __future__ import annotations

import logging
import shutil
import stat
import subprocess
import uuid
from pathlib import Path

import numpy as np
import pytest

from veriforge.core import integrity
from veriforge.cuda.tasks import load_task
from veriforge.cuda.tasks.generate import make_case
from veriforge.cuda.tasks.reference import compile_c_reference, reference_outputs, run_c_reference

AXPY = Path(__file__).parent / "data" / "c2cuda" / "vec_scale_add"
EVIL_C = "void reference(const float* x, const float* y, float* out, float alpha, int n) {\n" \
         "    for (int i = 0; i < n; ++i) out[i] = 12345.0f;\n}\n"


@pytest.fixture
def fresh_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "fresh-home"
    monkeypatch.setenv("VERIFORGE_HOME", str(home))
    return home


def _expected(spec, case) -> np.ndarray:
    x, y = case.array(spec, "x"), case.array(spec, "y")
    return np.float32(case.env["alpha"]) * x + y


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_reference_outputs_are_cached_signed_and_private(fresh_home):
    spec = load_task(AXPY)
    case = make_case(spec, "small", 0)
    first = reference_outputs(spec, case)
    np.testing.assert_allclose(first["out"], _expected(spec, case), rtol=1e-6)
    folder = fresh_home / "cache" / "c-ref-out"
    (cached,) = folder.glob("*.npz")
    assert integrity.signature_path(cached).is_file()
    assert _mode(folder) == 0o700 and _mode(fresh_home / "cache" / "c-ref") == 0o700
    inode = cached.stat().st_ino
    again = reference_outputs(spec, case)
    np.testing.assert_array_equal(again["out"], first["out"])
    assert cached.stat().st_ino == inode  # a verified hit: not rewritten


def test_tampered_reference_outputs_are_recomputed(fresh_home, caplog):
    spec = load_task(AXPY)
    case = make_case(spec, "small", 0)
    good = reference_outputs(spec, case)["out"]
    (cached,) = (fresh_home / "cache" / "c-ref-out").glob("*.npz")
    # a candidate overwrites the cached expected outputs with its own numbers (same shape and dtype)
    np.savez(cached, out=np.full_like(good, 7.0))
    with caplog.at_level(logging.WARNING, logger="veriforge.cuda.tasks.reference"):
        got = reference_outputs(spec, case)["out"]
    np.testing.assert_allclose(got, _expected(spec, case), rtol=1e-6)
    assert "no valid signature" in caplog.text
    assert integrity.verify_file(cached, *_npz_parts(cached))  # re-signed, fresh contents
    with np.load(cached) as data:
        np.testing.assert_array_equal(data["out"], good)


def _npz_parts(cached: Path) -> tuple[str, ...]:
    """The key a cached output file is signed for: only its 40-character prefix is in the name, so
    look the full one up the way the cache does (recompute from the task and case)."""
    import hashlib

    from veriforge.cuda.tasks.reference import task_content_hash

    spec = load_task(AXPY)
    case = make_case(spec, "small", 0)
    key = hashlib.sha256(f"{task_content_hash(spec)}\0{case.config}\0{case.trial}\0{'1'}".encode()).hexdigest()
    assert cached.name == f"{key[:40]}.npz"
    return ("c-ref-out", key)


def test_reference_outputs_with_a_missing_or_transplanted_signature_are_recomputed(fresh_home):
    spec = load_task(AXPY)
    small, odd = make_case(spec, "small", 0), make_case(spec, "odd", 0)
    reference_outputs(spec, small)
    reference_outputs(spec, odd)
    folder = fresh_home / "cache" / "c-ref-out"
    files = {p.stat().st_size: p for p in folder.glob("*.npz")}
    small_file, odd_file = files[min(files)], files[max(files)]
    # copy the other entry's file *and* its genuine signature: signed for another key, so no hit
    shutil.copyfile(odd_file, small_file)
    shutil.copyfile(integrity.signature_path(odd_file), integrity.signature_path(small_file))
    np.testing.assert_allclose(reference_outputs(spec, small)["out"], _expected(spec, small), rtol=1e-6)
    integrity.signature_path(small_file).unlink()
    np.testing.assert_allclose(reference_outputs(spec, small)["out"], _expected(spec, small), rtol=1e-6)
    assert integrity.signature_path(small_file).is_file()


def test_tampered_reference_library_is_rebuilt_before_it_is_loaded(fresh_home):
    spec = load_task(AXPY)
    case = make_case(spec, "odd", 1)
    source = (AXPY / "reference.c").read_text()
    good = compile_c_reference(source)  # built (and signed) but not loaded in this process yet
    evil = compile_c_reference(EVIL_C)
    assert good != evil and good.parent == evil.parent == fresh_home / "cache" / "c-ref"
    # swap in another library together with its genuine signature (signed for another source)
    shutil.copyfile(evil, good)
    shutil.copyfile(integrity.signature_path(evil), integrity.signature_path(good))
    out = run_c_reference(spec, case)["out"]
    np.testing.assert_allclose(out, _expected(spec, case), rtol=1e-6)
    assert not np.any(out == 12345.0)
    assert good.read_bytes() != evil.read_bytes()
    assert integrity.verify_file(good, "c-ref", good.stem)


# --- CPU runtime build cache --------------------------------------------------------------------

def _program(word: str) -> str:
    return (f"// {uuid.uuid4().hex}: unique to this test run\n#include <cstdio>\n"
            f'int main() {{ std::printf("{word}\\n"); return 0; }}\n')


def test_tampered_cached_executable_is_rebuilt(caplog):
    from veriforge.cuda.cpu import build, program

    rt = build.runtime()  # pinned: one runtime for the whole test

    def exe_for(source: str) -> Path:
        text = program._program_text(source, None, "program.cu")
        return build.build_executable(rt, text, kind="program", user_file="program.cu", user_source=source)

    good_src, evil_src = _program("good"), _program("evil")
    good, evil = exe_for(good_src), exe_for(evil_src)
    assert good != evil and good.parent == rt.root / "bin"
    assert integrity.signature_path(good).is_file()
    # bin/ (built executables) and the cache folder stay private; the runtime itself is readable, so it can be
    # lent read-only to sandboxed builds (objects and headers only, nothing secret).
    assert _mode(good.parent) == 0o700 and _mode(rt.root) == 0o755 and _mode(rt.root.parent) == 0o700
    assert exe_for(good_src) == good  # verified hit
    # a candidate replaces the cached executable (and copies a genuine signature of another one)
    shutil.copyfile(evil, good)
    shutil.copyfile(integrity.signature_path(evil), integrity.signature_path(good))
    with caplog.at_level(logging.WARNING, logger="veriforge.cuda.cpu.build"):
        rebuilt = exe_for(good_src)
    assert rebuilt == good and "no valid signature" in caplog.text
    assert rebuilt.read_bytes() != evil.read_bytes()
    assert integrity.verify_file(rebuilt, "cpu-exe", rt.root.name, rebuilt.name)
    out = subprocess.run([str(rebuilt)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "good", out


def test_runtime_manifest_detects_changed_added_and_removed_files(tmp_path):
    from veriforge.cuda.cpu import build

    rt = build.runtime()
    assert build._runtime_problem(rt.root) is None
    copy = tmp_path / rt.root.name  # the signature names the runtime folder, not where it lies
    shutil.copytree(rt.root, copy, ignore=shutil.ignore_patterns("bin"))
    assert build._runtime_problem(copy) is None  # new inodes: falls back to comparing contents
    header = copy / "vf_core.h"
    original = header.read_bytes()
    header.write_bytes(original.replace(b"namespace", b"namespacE", 1))
    assert "vf_core.h changed" in build._runtime_problem(copy)
    header.write_bytes(original)
    assert build._runtime_problem(copy) is None
    (copy / "include" / "cstdio").write_text("#error shadowing a system header\n")
    assert "added or removed" in build._runtime_problem(copy)
    (copy / "include" / "cstdio").unlink()
    (copy / "fiber.o").unlink()
    assert "added or removed" in build._runtime_problem(copy)
    renamed = tmp_path / "other" / (rt.root.name + "x")
    shutil.copytree(rt.root, renamed, ignore=shutil.ignore_patterns("bin"))
    assert "signature" in build._runtime_problem(renamed)
    (rt.root / build.MANIFEST).read_text()  # the real one is untouched
    assert build._runtime_problem(rt.root) is None
