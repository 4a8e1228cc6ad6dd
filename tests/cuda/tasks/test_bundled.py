"""The bundled dataset: every task validates (schema, signatures, references) and EVERY implementation of
EVERY task is judged correct by the CPU back-end on every configuration with two trials each.

The whole check (``-m expensive``) is 195 evaluations on 2 workers sharing the build caches (CPU runtime
built once, each reference compiled once, PyTorch→CUDA candidates forked from one fork server that
imported torch once). About 1 minute cold on 2 cores (~90 s of CPU; it was ~190 s of CPU and 4-10
minutes before the fork server). The default suite runs the static checks of every task and every
implementation of a fixed quarter of them.
"""

from __future__ import annotations

import pytest

from veriforge.cuda.tasks import bundled_tasks, load_task
from veriforge.cuda.tasks.validate import validate_many


def _validate_all(folders: list) -> None:
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


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_bundled_sample_validates_and_every_task_passes_the_static_checks() -> None:
    """Every task: schema, signatures, metrics at every configuration (timing ones too), references.
    Every implementation of every fourth task (a fixed sample spanning both families and every
    category): judged correct on every configuration. The whole set runs with -m expensive."""
    folders = bundled_tasks()
    statics = validate_many(folders, jobs=2, run_impls=False)
    assert not {r.task_id: r.problems for r in statics if r.problems}
    _validate_all(folders[::4])


@pytest.mark.expensive
@pytest.mark.timeout(1200)
def test_bundled_dataset_validates() -> None:
    _validate_all(bundled_tasks())
