"""Share the slow-to-build caches across the tests of this folder and of tests/cuda/tasks.

Every test gets its own VERIFORGE_HOME (tests/conftest.py); rebuilding the CPU runtime (5-15 s)
or recompiling the same candidate in every test would dominate the suite, so the caches of
built artefacts (``cpu-runtime``: runtime + compiled programs, ``c-ref``: reference libraries,
``c-ref-out``: reference outputs) point at one folder per test session, the same folder for
both test packages (a fixed name under the session's base temp dir, so the runtime is built once
per session, not once per package). Evaluation results (the run store) stay per test.
"""

from __future__ import annotations

import os

import pytest

SHARED = ("cpu-runtime", "c-ref", "c-ref-out")
SESSION_HOME = "vf-cuda-shared-home"  # same name in tests/cuda/tasks/conftest.py


@pytest.fixture(scope="session")
def _eval_session_home(tmp_path_factory) -> str:
    home = tmp_path_factory.getbasetemp() / SESSION_HOME
    for name in SHARED:
        (home / "cache" / name).mkdir(parents=True, exist_ok=True)
    return str(home)


@pytest.fixture(autouse=True)
def _share_build_caches(_isolated_home, _eval_session_home):
    for name in SHARED:
        link = _isolated_home / "cache" / name
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            link.symlink_to(os.path.join(_eval_session_home, "cache", name))
    yield
