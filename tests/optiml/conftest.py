"""Fixtures for the OptiML tests.

The root conftest shares the CPU-runtime and C-reference build caches across the session; OptiML
also re-runs ptxas for the same candidates in many tests, so its ``nvcc`` cache is shared within
this folder too (content-addressed, safe to share; the run store stays private to each test).
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def optiml_session_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("vf-optiml-home")
    (home / "cache" / "nvcc").mkdir(parents=True)
    return home


@pytest.fixture(autouse=True)
def _share_nvcc_cache(_isolated_home, optiml_session_home):
    link = _isolated_home / "cache" / "nvcc"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.exists():
        link.symlink_to(optiml_session_home / "cache" / "nvcc")
    yield
