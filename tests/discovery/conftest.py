"""The fixture repositories contain their own (deliberately unrelated) tests/ folders: they are input
data for the miner, never part of veriforge's test suite."""

from pathlib import Path
from typing import Any

import pytest

collect_ignore_glob = ["fixtures/*"]


@pytest.fixture
def build_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``build_repo(repo, **config) -> BuildReport``: the whole build (reuse-mode environment, one
    validation rerun) into ``tmp_path/out`` with a private run store and VERIFORGE_HOME."""
    from veriforge.core.store import RunStore
    from veriforge.discovery.build import BuildConfig, build_tasks

    monkeypatch.setenv("VERIFORGE_HOME", str(tmp_path / "home"))

    def run(repo: Path, **config: Any) -> Any:
        cfg = BuildConfig(**{"env_mode": "reuse", "timeout_s": 120, "validate_reruns": 1, **config})
        store = RunStore(tmp_path / "runs.sqlite")
        try:
            return build_tasks(repo, tmp_path / "out", cfg, store=store)
        finally:
            store.close()

    return run
