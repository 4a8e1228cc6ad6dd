"""The child of ``run_isolated`` is confined, and what it sends back cannot run code in the harness."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

from veriforge.cuda.evaluate.backend import BackendRun, CaseOutput
from veriforge.cuda.evaluate.isolation import load_result


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch /tmp/vf-isolation-pwned",))


def test_a_result_pickle_that_would_run_code_is_refused(tmp_path: Path) -> None:
    marker = Path("/tmp/vf-isolation-pwned")
    marker.unlink(missing_ok=True)
    path = tmp_path / "result.pkl"
    path.write_bytes(pickle.dumps(BackendRun(status="ok", message="x", features={"k": _Evil()})))
    assert load_result(path) is None
    assert not marker.exists()


def test_results_with_arrays_still_load(tmp_path: Path) -> None:
    import numpy as np

    run = BackendRun(status="ok", cases=[CaseOutput(config="c", trial=1, outputs={"y": np.arange(5.0)})])
    path = tmp_path / "result.pkl"
    path.write_bytes(pickle.dumps(run, protocol=pickle.HIGHEST_PROTOCOL))
    back = load_result(path)
    assert isinstance(back, BackendRun) and back.cases[0].outputs["y"].tolist() == [0, 1, 2, 3, 4]


def test_a_linked_result_is_not_followed(tmp_path: Path) -> None:
    path = tmp_path / "result.pkl"
    os.symlink("/etc/hostname", path)
    assert load_result(path) is None
