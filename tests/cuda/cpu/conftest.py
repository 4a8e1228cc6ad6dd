"""Fixtures for the CPU runtime tests.

Every test gets its own VERIFORGE_HOME (tests/conftest.py); rebuilding the runtime (~5 s) for
each would dominate the suite, so the ``cpu-runtime`` cache folder of every test home points at
one folder shared by the session. Module-scoped fixtures compile with VERIFORGE_HOME set to a
session home too, so nothing is ever written to the user's real cache.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest


@pytest.fixture(scope="session")
def cpu_session_home(tmp_path_factory) -> str:
    home = tmp_path_factory.mktemp("vf-cpu-home")
    (home / "cache" / "cpu-runtime").mkdir(parents=True)
    return str(home)


@pytest.fixture(autouse=True)
def _share_cpu_runtime_cache(_isolated_home, cpu_session_home):
    link = _isolated_home / "cache" / "cpu-runtime"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.symlink_to(os.path.join(cpu_session_home, "cache", "cpu-runtime"))
    yield


@pytest.fixture(scope="module")
def compile_cu(cpu_session_home) -> Callable:
    """``compile_cu(source, **kw)``: cpu.compile with the session home (usable from module fixtures)."""
    from veriforge.cuda import cpu

    modules = []

    def _compile(source: str, **kw):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("VERIFORGE_HOME", cpu_session_home)
            mod = cpu.compile(source, **kw)
        modules.append(mod)
        return mod

    yield _compile
    for m in modules:
        m.close()
