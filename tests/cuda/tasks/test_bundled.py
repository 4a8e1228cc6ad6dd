"""The bundled dataset: every task validates (schema, signatures, references, every implementation
correct on the CPU back-end). The slowest test of this package (~3-7 min on 2 busy cores)."""

from __future__ import annotations

import pytest

from veriforge.cuda.tasks import bundled_tasks
from veriforge.cuda.tasks.validate import validate_many


@pytest.mark.slow
def test_bundled_dataset_validates() -> None:
    folders = bundled_tasks()
    if not folders:
        pytest.skip("no bundled tasks yet")
    reports = validate_many(folders)
    failed = {r.task_id or str(r.path): r.problems + [f"{i.name}: {i.reason}" for i in r.impls if not i.correct]
              for r in reports if not r.ok}
    assert not failed, failed
    families = {r.family for r in reports}
    assert families <= {"c2cuda", "torch2cuda"}
