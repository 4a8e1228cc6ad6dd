"""Held-out sizes: the last check of a would-be best kernel, on inputs no proposer ever saw.

A model that is shown the exact sizes a kernel is checked at can write a kernel that is right only
there (a tiled transpose without bounds checks is correct when every size is a multiple of the
tile). Re-checking with another seed changes the values, not the sizes, so it cannot catch that.
So the winner of a search must also be correct at sizes that are never in a prompt, never in the
task's configurations and never in a rejection reason a proposer reads:

* :func:`candidate_configs` derives them from the task's two smallest configurations by rules that
  break alignment: odd sizes just below (7/8 of every integer variable, made odd), one past (+1), tiny
  (at most 5: smaller than a warp or a block), and skewed (one variable cut to an odd ~1/8, as in
  37x1000). Each gets a name that encodes its values (evaluation caches are keyed by config name)
  and a seed of its own.
* A generated size may lie outside the task's domain (a sort that requires a power of two, a
  derived variable such as ``log2n`` that no longer matches). The starting kernel decides: only
  sizes it passes are kept (:meth:`HeldOut.prepare`). When a finalist fails a kept size, the task's
  bundled implementations are asked too: if one of them fails there as well, the size is outside
  what the task promises, it is dropped with that reason, and the finalist is not blamed.
* The rejection reason names the held-out configurations by index only; their sizes are in
  ``tree.json`` (``heldout``) for the user.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from veriforge.search.interfaces import Evaluation

if TYPE_CHECKING:
    from veriforge.core.types import Candidate
    from veriforge.cuda.tasks.schema import ConfigSpec, TaskSpec

__all__ = ["HELDOUT_SEED", "HeldOut", "candidate_configs", "heldout_spec"]

HELDOUT_SEED = 104729  # inputs of their own (a prime unlike the search's and the re-check's seeds)
MAX_CANDIDATES = 8
MAX_KEPT = 4


def _ints(cfg: ConfigSpec) -> dict[str, int]:
    return {k: v for k, v in cfg.variables.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 2}


def _odd_below(v: int) -> int:
    return max(1, (v * 7) // 8) | 1


def _name(values: dict[str, Any]) -> str:
    plain = "heldout." + ".".join(f"{k}{v}" for k, v in sorted(values.items()))
    if len(plain) <= 60 and all(isinstance(v, int) for v in values.values()):
        return plain.replace("-", "m")
    return "heldout." + hashlib.sha256(repr(sorted(values.items())).encode()).hexdigest()[:12]


def candidate_configs(spec: TaskSpec, limit: int = MAX_CANDIDATES) -> list[ConfigSpec]:
    """Sizes derived from the task's two smallest configurations that none of its configurations has."""
    from veriforge.cuda.tasks.schema import ConfigSpec

    def weight(c: ConfigSpec) -> int:
        w = 1
        for v in _ints(c).values():
            w *= v
        return w

    sources = sorted((c for c in spec.configs if _ints(c)), key=weight)[:2]
    seen = {tuple(sorted(c.variables.items())) for c in (*spec.configs, *spec.timing)}
    rules: list[tuple[str, ConfigSpec, dict[str, int]]] = []
    for src in sources:
        ints = _ints(src)
        rules.append(("odd", src, {k: _odd_below(v) for k, v in ints.items()}))
        rules.append(("tail", src, {k: v + 1 for k, v in ints.items()}))
        rules.append(("tiny", src, {k: min(v, 5) | 1 for k, v in ints.items()}))
        if len(ints) >= 2:
            for key in list(ints)[:2]:
                rules.append(("skew", src, {**ints, key: _odd_below(max(ints[key] // 8, 2))}))
    out: list[ConfigSpec] = []
    for _rule, src, change in rules:
        values = {**src.variables, **change}
        ident = tuple(sorted(values.items()))
        if ident in seen:
            continue
        seen.add(ident)
        name = _name(values)
        seed = int(hashlib.sha256(name.encode()).hexdigest()[:7], 16)
        out.append(ConfigSpec(name=name, seed=seed, init=dict(src.init), **values))
        if len(out) >= limit:
            break
    return out


def heldout_spec(spec: TaskSpec, configs: list[ConfigSpec]) -> TaskSpec:
    """``spec`` verified at ``configs`` instead of its own (and nothing timed: this is a correctness check)."""
    return spec.model_copy(update={"configs": list(configs), "timing": []})


@dataclass
class HeldOut:
    """The held-out sizes of one search and the verdicts on them (``tree.json``'s ``heldout``)."""

    spec: TaskSpec
    start: Candidate
    backend: str = "cpu"
    trials: int = 2
    store: Any = None
    configs: list[ConfigSpec] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)  # candidate hash -> result
    prepared: bool = False
    note: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _evaluate(self, cand: Any, configs: list[ConfigSpec]) -> Any:
        from veriforge.cuda.evaluate import evaluate

        return evaluate(heldout_spec(self.spec, configs), cand, backend=self.backend, store=self.store,
                        trials=self.trials, seed=HELDOUT_SEED, estimate=False)

    def prepare(self) -> None:
        """Keep the generated sizes the starting kernel passes (once; the first final check calls it)."""
        if self.prepared:
            return
        self.prepared = True
        candidates = candidate_configs(self.spec)
        if not candidates:
            self.note = "no integer size variables to vary: no held-out sizes"
            return
        try:
            res = self._evaluate(self.start, candidates)
        except Exception as exc:  # the check is an extra guarantee; say why it is missing
            self.note = f"held-out sizes unavailable: the starting kernel could not be evaluated ({exc})"
            return
        passed = {r.config for r in res.verdict.results if r.passed}
        for c in candidates:
            if c.name in passed and len(self.configs) < MAX_KEPT:
                self.configs.append(c)
            elif c.name not in passed:
                self.dropped[c.name] = "the starting kernel fails here: outside the task's domain"
        if not self.configs:
            self.note = "the starting kernel passes none of the generated sizes: no held-out check"

    def _outside_domain(self, name: str) -> str | None:
        """Why config ``name`` is outside the task (a bundled implementation fails there too), or None."""
        if self.spec.folder is None:
            return None
        from veriforge.core.types import Candidate

        cfg = next(c for c in self.configs if c.name == name)
        for impl in self.spec.implementations:
            src = (self.spec.folder / impl.file).read_text()
            try:
                res = self._evaluate(Candidate(source=src), [cfg])
            except Exception:
                continue
            if not res.correct:
                return f"bundled implementation {impl.name!r} fails here too: outside the task's domain"
        return None

    def check(self, cand: Candidate) -> Evaluation:
        """Verify ``cand`` at every held-out size; a failure not explained by the task's domain rejects it."""
        with self._lock:
            self.prepare()
            if not self.configs:
                return Evaluation(ok=True, objective=None, details={"heldout": self.note})
            try:
                res = self._evaluate(cand, self.configs)
            except Exception as exc:
                return Evaluation.failed(f"held-out check could not run: {type(exc).__name__}: {exc}")
            failed = [r for r in res.verdict.results if not r.passed]
            if not res.correct and not failed:
                # wrong as a whole (did not compile, refused, crashed before any config): no size to excuse;
                # the verdict's own reason may name the configs (and so their sizes), so it stays in tree.json
                self.checks[cand.hash] = {"passed": False, "failed": [c.name for c in self.configs],
                                          "messages": {"*": res.verdict.reason}}
                return Evaluation.failed("failed as a whole at held-out input sizes never shown to the proposer "
                                         "(the verdict is in tree.json, heldout)")
            blamed = []
            for r in failed:
                why = self._outside_domain(r.config)
                if why:
                    self.dropped[r.config] = why
                    self.configs = [c for c in self.configs if c.name != r.config]
                else:
                    blamed.append(r.config)
            index = {c.name: i + 1 for i, c in enumerate(self.configs)}
            self.checks[cand.hash] = {"passed": not blamed, "failed": blamed,
                                      "messages": {r.config: r.message for r in failed if r.config in blamed}}
            if blamed:
                which = ", ".join(f"#{index.get(n, '?')}" for n in blamed)
                return Evaluation.failed(f"wrong at held-out input sizes never shown to the proposer "
                                         f"(held-out config {which} of {len(self.configs)}; "
                                         f"the sizes are in tree.json, heldout)")
            return Evaluation(ok=True, objective=None, details={"heldout": [c.name for c in self.configs]})

    def to_json(self) -> dict[str, Any]:
        return {
            "configs": [{"name": c.name, **c.variables} for c in self.configs],
            "dropped": dict(self.dropped),
            "checks": dict(self.checks),
            "note": self.note,
            "seed": HELDOUT_SEED,
        }
