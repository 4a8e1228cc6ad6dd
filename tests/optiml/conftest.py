"""Fixtures for the OptiML tests.

The root conftest shares the content-addressed build caches across the session (the CPU runtime,
C references and nvcc's resource reports: OptiML re-runs ptxas on the same candidates in many
tests); the run store stays private to each test.
"""

from __future__ import annotations

import pytest


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
