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


def _global_load_requests(spec, source: str, config: str) -> float:
    """Warp-level global load requests every launch of ``source``'s entry makes for one config.

    Operators such as shared-memory staging remove global *requests*; with the cost model's L1 and
    L2 reuse (issue 13) that no longer always shows as estimated time on the bundled small configs,
    so tests check the traffic the edit removes as well as the time it does not add.
    """
    from veriforge.cuda.calibrate import launch_reports
    from veriforge.cuda.tasks.generate import make_case

    case = make_case(spec, config, 0)
    scalars = {p.name: v for p, v in zip(spec.params, case.args, strict=True) if p.role == "scalar"}
    inputs = {p.name: v for p, v in zip(spec.params, case.args, strict=True) if p.role == "in"}
    return sum(a.requests or 0.0 for _key, rep in launch_reports(source, spec.entry, scalars, "H100-SXM", inputs)
               for a in rep.global_accesses if a.kind == "load")


@pytest.fixture
def global_load_requests():
    """:func:`_global_load_requests` as a fixture (test modules are imported with importlib)."""
    return _global_load_requests
