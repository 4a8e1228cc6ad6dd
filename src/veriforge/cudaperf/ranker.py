"""CudaPerf's offline pairwise rankers, and their two uses: a filter before evaluation and a
reward-shaping term.

* :class:`FeatureRanker` — :class:`~veriforge.rank.features.LogisticPairwiseRanker` or
  :class:`~veriforge.rank.features.RankNetRanker` on the static features of
  :mod:`veriforge.cudaperf.rank_features`, saved as one JSON file.
* :class:`~veriforge.cudaperf.lm_ranker.LMRanker` — a sequence-classification language model
  trained with TRL's ``RewardTrainer`` on (chosen = faster, rejected = slower) programs.

Both answer ``score(sources, task=None, config=None) -> list[float]`` (higher = predicted
faster; only differences between scores of the same task mean anything). :func:`load_ranker` opens
either from its path.

Uses:

* :func:`filter_candidates` keeps the ``keep`` best-scored candidates, so only those pay for an
  evaluation;
* :func:`shape_reward` adds ``weight · (σ(score − baseline score) − 0.5)`` to a correct
  candidate's :class:`~veriforge.cudaperf.reward.Reward`. A *prediction* of speed must never beat
  the reward's own evidence, so the term is bounded and keeps every invariant of the reward (see
  :func:`check_shaping_weight`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from veriforge.cudaperf.rank_features import FEATURE_NAMES, FEATURES_VERSION, feature_vector, static_features
from veriforge.errors import VeriforgeError

__all__ = ["FORMAT", "FeatureRanker", "Ranker", "RankerError", "check_shaping_weight", "filter_candidates",
           "load_ranker", "pairwise_accuracy", "rank_candidates", "ranker_shaping", "shape_reward"]

FORMAT = "veriforge-cudaperf-ranker/1"


class RankerError(VeriforgeError, ValueError):
    """A ranker cannot be trained, loaded or used as asked (bad kind, bad file, bad weight)."""


class Ranker(Protocol):
    """Anything that scores programs; higher = predicted faster (within one task)."""

    def score(self, sources: Sequence[str], *, task: Any = None, config: str | None = None) -> list[float]:
        ...


# ------------------------------------------------------------------------------------ feature ranker


class FeatureRanker:
    """A pairwise ranker on static program features (logistic Bradley–Terry or RankNet).

    ``features`` selects the feature columns: ``"all"`` (text + analysis), ``"text"`` (source text
    only: works without a task), ``"analysis"``. ``score`` computes features from source text; the
    analysis part needs the task (and optionally the configuration) the sources are for.
    """

    def __init__(self, kind: str = "logistic", *, features: str = "all", margin_weighting: str = "log",
                 **params: Any) -> None:
        if kind not in ("logistic", "ranknet"):
            raise RankerError(f"unknown feature ranker kind {kind!r}; known: logistic, ranknet")
        if features not in ("all", "text", "analysis"):
            raise RankerError(f"unknown feature set {features!r}; known: all, text, analysis")
        if margin_weighting not in ("none", "log"):
            raise RankerError(f"unknown margin weighting {margin_weighting!r}; known: none, log")
        self.kind, self.feature_set, self.margin_weighting, self.params = kind, features, margin_weighting, params
        self.names: tuple[str, ...] = tuple(n for n in FEATURE_NAMES if features == "all"
                                            or n.startswith(f"{features}."))
        self.model: Any = self._new_model()
        self.n_pairs = 0

    def _new_model(self) -> Any:
        from veriforge.rank.features import LogisticPairwiseRanker, RankNetRanker

        try:
            return LogisticPairwiseRanker(**self.params) if self.kind == "logistic" else RankNetRanker(**self.params)
        except TypeError as exc:
            raise RankerError(f"bad {self.kind} parameters {self.params}: {exc}") from exc

    @property
    def needs_task(self) -> bool:
        return self.feature_set != "text"

    def fit(self, pairs: Sequence[Any]) -> FeatureRanker:
        """Fit on :class:`~veriforge.cudaperf.pairs.PairRecord` s (their stored features)."""
        import numpy as np

        if not pairs:
            raise RankerError("no pairs to train on")
        xs = np.array([feature_vector(p.faster.features, self.names) for p in pairs])
        xw = np.array([feature_vector(p.slower.features, self.names) for p in pairs])
        if self.margin_weighting == "log":
            w = np.log(np.array([max(1.0 + 1e-9, p.speedup) for p in pairs]))
            w = w / w.mean()
        else:
            w = np.ones(len(pairs))
        self.model = self._new_model().fit(xs, xw, weights=w)
        self.n_pairs = len(pairs)
        return self

    def score_features(self, features: Sequence[Mapping[str, float]]) -> list[float]:
        """Scores of precomputed feature dicts."""
        import numpy as np

        if not features:
            return []
        x = np.array([feature_vector(f, self.names) for f in features])
        try:
            return [float(v) for v in self.model.score(x)]
        except VeriforgeError as exc:
            raise RankerError(str(exc)) from exc

    def score(self, sources: Sequence[str], *, task: Any = None, config: str | None = None) -> list[float]:
        """Scores of programs for ``task`` (needed unless the ranker uses text features only)."""
        if self.needs_task and task is None:
            raise RankerError(f"this ranker uses {self.feature_set!r} features: pass the task the sources are for "
                              "(or train it with features='text')")
        if self.needs_task:
            from veriforge.cuda.evaluate.harness import resolve_task

            task = resolve_task(task)
        return self.score_features([static_features(s, task, config) for s in sources])

    def pair_scores(self, pairs: Sequence[Any]) -> list[tuple[float, float]]:
        """(faster score, slower score) per pair, from the pairs' stored features."""
        fa = self.score_features([p.faster.features for p in pairs])
        sl = self.score_features([p.slower.features for p in pairs])
        return list(zip(fa, sl, strict=True))

    # ------------------------------------------------------------------ persistence

    def to_dict(self) -> dict[str, Any]:
        m = self.model
        if getattr(m, "mean_", None) is None:
            raise RankerError("the ranker is not fitted yet")
        state: dict[str, Any] = {"mean": m.mean_.tolist(), "scale": m.scale_.tolist()}
        if self.kind == "logistic":
            state["coef"] = m.coef_.tolist()
        else:
            state["params"] = {k: v.tolist() for k, v in m.params_.items()}
        return {"format": FORMAT, "kind": "feature", "model": self.kind, "features": self.feature_set,
                "feature_names": list(self.names), "features_version": FEATURES_VERSION,
                "margin_weighting": self.margin_weighting, "params": self.params, "n_pairs": self.n_pairs,
                "state": state}

    def save(self, path: str | Path) -> Path:
        """Write the ranker as one JSON file."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        return path

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FeatureRanker:
        import numpy as np

        if data.get("format") != FORMAT or data.get("kind") != "feature":
            raise RankerError(f"not a feature ranker (format {data.get('format')!r}, kind {data.get('kind')!r})")
        if data.get("features_version") != FEATURES_VERSION:
            raise RankerError(f"the ranker was trained on {data.get('features_version')!r} features; this code "
                              f"computes {FEATURES_VERSION!r}: retrain it")
        r = cls(data["model"], features=data["features"], margin_weighting=data.get("margin_weighting", "log"),
                **dict(data.get("params") or {}))
        if tuple(data["feature_names"]) != r.names:
            raise RankerError("the ranker's feature names differ from this code's: retrain it")
        st = data["state"]
        r.model.mean_, r.model.scale_ = np.array(st["mean"]), np.array(st["scale"])
        if r.kind == "logistic":
            r.model.coef_ = np.array(st["coef"])
        else:
            r.model.params_ = {k: np.array(v) for k, v in st["params"].items()}
        r.n_pairs = int(data.get("n_pairs", 0))
        return r

    @classmethod
    def load(cls, path: str | Path) -> FeatureRanker:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise RankerError(f"cannot read ranker {path}: {exc}") from exc
        return cls.from_dict(data)


def load_ranker(path: str | Path) -> Any:
    """A :class:`FeatureRanker` (JSON file) or an :class:`~veriforge.cudaperf.lm_ranker.LMRanker`
    (directory holding ``ranker.json``)."""
    p = Path(path)
    if p.is_dir():
        from veriforge.cudaperf.lm_ranker import LMRanker

        return LMRanker.load(p)
    if not p.is_file():
        raise RankerError(f"no ranker at {p}")
    return FeatureRanker.load(p)


# ------------------------------------------------------------------------------------ evaluation


def pairwise_accuracy(scores: Sequence[tuple[float, float]]) -> float:
    """Fraction of (faster, slower) score pairs ordered correctly; exact ties count ½ (so a
    constant scorer gets 0.5, as chance does). ``nan`` for no pairs."""
    if not scores:
        return math.nan
    hits = [0.5 if a == b else float(a > b) for a, b in scores]
    return sum(hits) / len(hits)


def pair_scores_by_sources(ranker: Ranker, pairs: Sequence[Any]) -> list[tuple[float, float]]:
    """(faster, slower) scores of each pair by scoring the two sources (for rankers that read text)."""
    uniq: dict[str, int] = {}
    for p in pairs:
        for s in (p.faster.source, p.slower.source):
            uniq.setdefault(s, len(uniq))
    scores = ranker.score(list(uniq))
    return [(scores[uniq[p.faster.source]], scores[uniq[p.slower.source]]) for p in pairs]


# ------------------------------------------------------------------------------------- uses


def rank_candidates(sources: Sequence[str], ranker: Ranker, *, task: Any = None, config: str | None = None
                    ) -> list[tuple[int, float]]:
    """``(index, score)`` of every source, best first (equal scores keep input order)."""
    scores = ranker.score(list(sources), task=task, config=config) if _takes_task(ranker) \
        else ranker.score(list(sources))
    return sorted(enumerate(scores), key=lambda t: (-t[1], t[0]))


def filter_candidates(sources: Sequence[str], ranker: Ranker, keep: int, *, task: Any = None,
                      config: str | None = None) -> list[str]:
    """The ``keep`` best-scored sources, best first: the ones worth an evaluation."""
    if keep < 1:
        raise RankerError("keep must be at least 1")
    return [sources[i] for i, _ in rank_candidates(sources, ranker, task=task, config=config)[:keep]]


def _takes_task(ranker: Any) -> bool:
    import inspect

    try:
        params = inspect.signature(ranker.score).parameters
    except (TypeError, ValueError):
        return False
    return "task" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def check_shaping_weight(weight: float, config: Any = "veriforge") -> None:
    """Refuse a shaping weight that could break the reward's invariants.

    The term lies in the open interval (−weight/2, +weight/2). With the ``veriforge`` shape:

    * **every correct candidate still beats every failure**: worst correct − weight/2 must stay
      above the best failure;
    * **a prediction never outweighs the evidence**: ``weight`` is at most the structure weight,
      so a candidate whose time is ``max_speedup^(weight/speed)`` better (1.1× with the defaults)
      wins whatever the ranker says.

    Published shapes (kevin, kernelgym) are only checked for the first rule in its simplest form
    (the shaped worst correct ≥ their best failure). Failures are never shaped, so their order is
    untouched.
    """
    from veriforge.cudaperf.reward import PRESETS, RewardConfig

    cfg = PRESETS.get(config, None) if isinstance(config, str) else config
    if not isinstance(cfg, RewardConfig):
        raise RankerError(f"unknown reward preset {config!r}")
    if not (weight >= 0 and math.isfinite(weight)):
        raise RankerError("the shaping weight must be a finite number >= 0")
    best_failure = max(cfg.wrong, cfg.timeout, cfg.crash, cfg.compile_error, cfg.cheat)
    if cfg.shape == "veriforge":
        worst_correct = cfg.correct - cfg.speed - cfg.slower
        if weight > cfg.structure:
            raise RankerError(f"shaping weight {weight:g} above the structure weight {cfg.structure:g}: a predicted "
                              "speed would count more than the reward's structure terms")
    elif cfg.shape == "kevin":
        worst_correct = cfg.correct
    else:  # kernelgym: 0.3 compiled + correct, minus its slower penalty
        worst_correct = 0.3 + cfg.correct - cfg.slower
        best_failure = max(best_failure, cfg.wrong + 0.3)
    if worst_correct - weight / 2 <= best_failure:
        raise RankerError(f"shaping weight {weight:g} lets a correct candidate fall to {worst_correct - weight / 2:g}, "
                          f"not above the best failure {best_failure:g}")


def _default_weight(weight: float | None, config: Any) -> float:
    """``None`` means the largest weight the rules allow with the ``veriforge`` shape: its structure weight."""
    if weight is not None:
        return weight
    from veriforge.cudaperf.reward import PRESETS

    cfg = PRESETS.get(config) if isinstance(config, str) else config
    if cfg is None or not hasattr(cfg, "structure"):
        raise RankerError(f"unknown reward preset {config!r}")
    return float(cfg.structure) if cfg.shape == "veriforge" else 0.05


def shape_reward(r: Any, score: float, baseline_score: float, *, weight: float | None = None,
                 config: Any = "veriforge") -> Any:
    """``r`` plus ``weight · (σ(score − baseline_score) − 0.5)`` as term ``ranker``, for a correct
    candidate only (failures are returned unchanged, so no failure can be lifted by the ranker).

    When the reward could not determine the speed (``speedup`` None while a speed term was scored)
    the term is clipped at 0: an unknown time is the worst time, so making the estimate unknown must
    not earn the ranker's bonus. A non-finite score difference adds nothing.
    ``weight`` None: the structure weight of ``config``.
    """
    weight = _default_weight(weight, config)
    check_shaping_weight(weight, config)
    if not r.correct or weight == 0:
        return r
    diff = float(score) - float(baseline_score)
    if not math.isfinite(diff):
        return r
    term = weight * (0.5 * (1.0 + math.tanh(0.5 * diff)) - 0.5)  # σ(diff) − ½, overflow-free
    term = max(-weight / 2 * (1 - 1e-12), min(weight / 2 * (1 - 1e-12), term))  # strictly inside the bound
    if r.speedup is None and "speed" in r.terms and r.terms["speed"] < 0:
        term = min(term, 0.0)
    terms = {**r.terms, "ranker": term}
    return replace(r, value=r.value + term, terms=terms)


@dataclass
class _Shaper:
    ranker: Any
    baseline_source: str
    weight: float
    config: Any
    task: Any = None
    config_name: str | None = None

    def __call__(self, r: Any, source: str) -> Any:
        if not r.correct:
            return r
        srcs = [source, self.baseline_source]
        scores = self.ranker.score(srcs, task=self.task, config=self.config_name) if _takes_task(self.ranker) \
            else self.ranker.score(srcs)
        return shape_reward(r, scores[0], scores[1], weight=self.weight, config=self.config)


def ranker_shaping(ranker: Ranker, baseline_source: str, *, weight: float | None = None, config: Any = "veriforge",
                   task: Any = None, config_name: str | None = None) -> Callable[[Any, str], Any]:
    """``f(reward, source) -> reward``: :func:`shape_reward` with the ranker's scores of ``source``
    and of the baseline program. The weight (None: the structure weight) is checked once here."""
    weight = _default_weight(weight, config)
    check_shaping_weight(weight, config)
    return _Shaper(ranker, baseline_source, weight, config, task, config_name)
