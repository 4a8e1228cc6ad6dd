"""Fixtures for the CPU runtime tests.

Every test gets its own VERIFORGE_HOME, whose ``cpu-runtime`` cache the root conftest points at one
folder shared by the session. Module-scoped fixtures compile with VERIFORGE_HOME set to that
session home, so nothing is ever written to the user's real cache.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.fixture(scope="session")
def cpu_session_home(session_build_home) -> str:
    """The root conftest's session home: its cpu-runtime cache is the one every test shares."""
    return session_build_home


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
