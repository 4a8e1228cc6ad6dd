"""The bundled dataset: every task validates (schema, signatures, references) and EVERY implementation of
EVERY task is judged correct by the CPU back-end on every configuration with two trials each.

The slowest test of the package: 195 evaluations on 2 workers sharing the build caches (CPU runtime
built once, each reference compiled once, PyTorch→CUDA candidates forked from one fork server that
imported torch once). About 1 minute cold on 2 cores (~90 s of CPU; it was ~190 s of CPU and 4-10
minutes before the fork server); the limit below leaves room for a heavily loaded machine.
"""

from __future__ import annotations

import pytest

from veriforge.cuda.tasks import bundled_tasks, load_task
from veriforge.cuda.tasks.validate import validate_many


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_bundled_dataset_validates() -> None:
    folders = bundled_tasks()
    if not folders:
        pytest.skip("no bundled tasks yet")
    reports = validate_many(folders, jobs=2)
    failed = {r.task_id or str(r.path): r.problems + [f"{i.name}: {i.reason}" for i in r.impls if not i.correct]
              for r in reports if not r.ok}
    assert not failed, failed
    assert {r.family for r in reports} <= {"c2cuda", "torch2cuda"}
    # Nothing was skipped: every implementation of every task was evaluated and passed.
    for folder, report in zip(folders, reports, strict=True):
        spec = load_task(folder)
        assert [i.name for i in report.impls] == [i.name for i in spec.implementations], spec.id
        for impl in report.impls:
            assert impl.correct and sorted(impl.configs) == sorted(c.name for c in spec.configs), (spec.id, impl)
