"""Fixtures for the OptiML tests.

Every test gets its own VERIFORGE_HOME (tests/conftest.py). Rebuilding the CPU runtime and
re-running ptxas for every test would dominate this folder's time, so those two *build* caches of
every test home point at folders shared by the session (the run store, where evaluations are
cached, stays private to each test, so no test sees another's results).
"""

from __future__ import annotations

import pytest

SHARED_CACHES = ("cpu-runtime", "nvcc", "c-ref", "c-ref-out")


@pytest.fixture(scope="session")
def optiml_session_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("vf-optiml-home")
    for name in SHARED_CACHES:
        (home / "cache" / name).mkdir(parents=True)
    return home


@pytest.fixture(autouse=True)
def _share_build_caches(_isolated_home, optiml_session_home):
    for name in SHARED_CACHES:
        link = _isolated_home / "cache" / name
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            link.symlink_to(optiml_session_home / "cache" / name)
    yield
