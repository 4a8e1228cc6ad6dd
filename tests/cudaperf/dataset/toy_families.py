"""Small task families for the dataset-build tests, made from copies of bundled tasks.

The real families are written in parallel and are too big for a test; these yield a handful of
tasks whose outcomes are known in advance:

``toy_axpy`` (c2cuda, from bundled saxpy, configs shrunk):
  * ``toy_axpy_a``  reference ``y[i] = y[i] + alpha * x[i]``        → kept
  * ``toy_axpy_b``  reference ``y[i] += alpha * x[i]``               → kept
  * ``toy_axpy_a_copy``  toy_axpy_a plus comments/blank lines        → exact duplicate of toy_axpy_a
  * ``toy_axpy_a_renamed``  toy_axpy_a with other local names        → structural duplicate of toy_axpy_a
  * ``toy_axpy_bundled``  the bundled saxpy reference unchanged      → dropped: reproduces c2cuda/saxpy
  * ``toy_axpy_broken``  reference ``y[i] = x[i] * alpha + y[i]``, naive impl subtracts → fails verification
``toy_relu`` (torch2cuda, from bundled relu): ``toy_relu_clamp`` with ``torch.clamp(x, min=0)`` → kept.

Registration is undone by :func:`unregister` so the session's family registry is left as it was.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path

from veriforge.cuda.tasks.load import bundled_root
from veriforge.cudaperf.dataset import family as family_mod
from veriforge.cudaperf.dataset.family import GeneratedTask, Impl

NAMES = ("toy_axpy", "toy_relu")
KEPT = {"toy_axpy_a", "toy_axpy_b", "toy_relu_clamp"}
C_IDS = ["toy_axpy_a", "toy_axpy_b", "toy_axpy_a_copy", "toy_axpy_a_renamed", "toy_axpy_bundled", "toy_axpy_broken"]

REF_A = """void reference(float alpha, const float* x, float* y, int n) {
    for (int i = 0; i < n; ++i) {
        y[i] = y[i] + alpha * x[i];
    }
}
"""
REF_A_COPY = """// the same computation, reformatted
void reference(float alpha,  const float* x,  float* y, int n)
{
    /* loop over every element */
    for (int i = 0; i < n; ++i) { y[i] = y[i] + alpha * x[i]; }
}
"""
REF_A_RENAMED = REF_A.replace("alpha", "scale").replace("x", "src").replace("y[", "dst[").replace("* y", "* dst")
REF_B = """void reference(float alpha, const float* x, float* y, int n) {
    for (int i = 0; i < n; ++i) y[i] += alpha * x[i];
}
"""
REF_BROKEN = """void reference(float alpha, const float* x, float* y, int n) {
    for (int i = 0; i < n; ++i) y[i] = x[i] * alpha + y[i];
}
"""


def _from_folder(folder: Path, task_id: str, reference: str, family: str, variant: dict, seed: int,
                 small: list[dict] | None = None, break_naive: bool = False) -> GeneratedTask:
    data = tomllib.loads((folder / "task.toml").read_text())
    kind = data["family"]
    ext = "cu" if kind == "c2cuda" else "py"
    impls = []
    for spec in data["implementations"]:
        source = (folder / spec["file"]).read_text()
        if break_naive and spec["name"] == "naive":
            source = source.replace("alpha * x[i] + y[i]", "alpha * x[i] - y[i]")
        impls.append(Impl(spec["name"], spec["strategy"], source, int(spec.get("quality", 1)),
                          spec.get("description", "")))
    assert all(Path(s["file"]).suffix == f".{ext}" for s in data["implementations"])
    return GeneratedTask(id=task_id, kind=kind, family=family, category=data["category"], title=data["title"],
                         description=data["description"], reference=reference, impls=impls,
                         configs=small or data["configs"], metrics=data["metrics"], params=data.get("params", []),
                         tolerance=data.get("tolerance", {}), tags=data.get("tags", []), variant=variant, seed=seed)


def toy_axpy(seed: int) -> Iterator[GeneratedTask]:
    """Six saxpy-like tasks with known dedup and verification outcomes."""
    folder = bundled_root() / "c2cuda" / "saxpy"
    small = [{"name": "small", "seed": 11 + seed, "n": 777, "alpha": 2.5},
             {"name": "odd", "seed": 12 + seed, "n": 4099, "alpha": -0.75}]
    saxpy = (folder / "reference.c").read_text()
    for task_id, ref, group, broken in (("toy_axpy_a", REF_A, "a", False), ("toy_axpy_b", REF_B, "b", False),
                                        ("toy_axpy_a_copy", REF_A_COPY, "a", False),
                                        ("toy_axpy_a_renamed", REF_A_RENAMED, "a", False),
                                        ("toy_axpy_bundled", saxpy, "s", False),
                                        ("toy_axpy_broken", REF_BROKEN, "x", True)):
        yield _from_folder(folder, task_id, ref, "toy_axpy", {"group": group, "form": task_id}, seed, small,
                           break_naive=broken)


def toy_relu(seed: int) -> Iterator[GeneratedTask]:
    """One torch2cuda task: the bundled relu with ``torch.clamp(x, min=0)`` as the reference."""
    folder = bundled_root() / "torch2cuda" / "relu"
    ref = (folder / "reference.py").read_text().replace("torch.relu(x)", "torch.clamp(x, min=0)")
    small = [{"name": "small_odd", "seed": 1 + seed, "batch_size": 3, "dim": 1001},
             {"name": "medium", "seed": 2 + seed, "batch_size": 4, "dim": 2048}]
    yield _from_folder(folder, "toy_relu_clamp", ref, "toy_relu", {"op": "clamp"}, seed, small)


def register() -> None:
    family_mod.family("toy_axpy", kind="c2cuda", category="elementwise")(toy_axpy)
    family_mod.family("toy_relu", kind="torch2cuda", category="elementwise")(toy_relu)


def unregister() -> None:
    for name in NAMES:
        family_mod._REGISTRY.pop(name, None)


def fake_verify(calls: list[str]):
    """A stand-in for ``build.verify_task`` (resume tests): instant, records every folder it is given;
    a task whose id contains ``broken`` fails."""

    def verify(folder: str, estimate: bool = True) -> dict:
        calls.append(Path(folder).name)
        ok = "broken" not in Path(folder).name
        return {"ok": ok, "problems": [], "seconds": 0.0,
                "impls": [{"name": n, "strategy": s, "verified": ok, "reason": "" if ok else "wrong output",
                           "seconds": 0.0,
                           "estimates": [{"config": "small", "time_s": 1e-6 * q, "provenance": "estimated",
                                          "gpu": "H100-SXM", "cost_model": "fake-model/1", "status": "exact"}]}
                          for q, (n, s) in enumerate((("naive", "naive"), ("grid_stride", "grid_stride"),
                                                      ("vectorized", "vectorized")), 1)]}

    return verify

