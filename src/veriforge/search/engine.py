"""The search loop every algorithm shares; algorithms differ only in which edit to try next.

One iteration: the algorithm's :meth:`SearchEngine.select` picks up to ``batch_size`` (parent,
edit) pairs; the new states are evaluated concurrently (``repeats`` samples each, guardrails
applied against the parent); each finished node is backed up the tree and written to the run
store with the engine's checkpoint. When the budget is spent (or nothing is left to try) the
``final_top_k`` best states are re-measured and the winner is declared, ties within
``tie_tolerance`` going to the state with fewer edits.

Everything that could differ between two runs with the same seed is fixed: proposals are merged
in proposer order, ties in selection are broken by the seeded generator, a batch's results are
applied in dispatch order whatever order they finish in. A resumed run restores the generator
and the algorithm's state from the checkpoint, so it retraces the same path, answering the
evaluations it already made from the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from veriforge.core.hashing import jsonable
from veriforge.errors import StoreError
from veriforge.search.config import SearchConfig
from veriforge.search.errors import ResumeError, SearchError
from veriforge.search.evaluation import EvaluationCache, checked_evaluation
from veriforge.search.interfaces import (
    Edit,
    Evaluation,
    StateCodec,
    as_evaluator,
    as_proposer,
    default_codec,
    maybe_await,
)
from veriforge.search.persist import RUN_KIND, TreeStore
from veriforge.search.scale import Scale
from veriforge.search.tree import ACCEPTED, PENDING, REJECTED, Node, SearchTree, aggregate

if TYPE_CHECKING:
    from veriforge.core.store import RunStore

__all__ = ["SearchEngine", "SearchResult", "SearchStats"]

S = TypeVar("S")
Choice = tuple[Node[Any], Edit[Any], str]


@dataclass
class SearchStats:
    """Counters of one search (cumulative over resumes).

    ``unique_evaluations`` is what the budget counts (distinct states evaluated, the initial one
    included); ``evaluator_calls`` the evaluator calls really made (re-measurements included,
    store hits excluded); ``duplicates`` proposed edits skipped because their state was already
    in the tree; ``remeasured`` the states re-measured before the winner was declared.
    """

    unique_evaluations: int = 0
    evaluator_calls: int = 0
    cache_hits: int = 0
    duplicates: int = 0
    accepted: int = 0
    rejected: int = 0
    remeasured: int = 0
    resumes: int = 0
    seconds: float = 0.0
    stop_reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class SearchResult(Generic[S]):
    """The outcome: the winning node, the whole tree, the counters and the progress curve."""

    algorithm: str
    best: Node[S]
    tree: SearchTree[S]
    stats: SearchStats
    run_id: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def best_state(self) -> S:
        return self.best.state

    @property
    def best_evaluation(self) -> Evaluation:
        ev = self.best.evaluation
        assert ev is not None
        return ev

    @property
    def initial(self) -> Node[S]:
        return self.tree.root

    def tree_json(self) -> dict[str, Any]:
        """The tree as JSON, with the algorithm, winner and counters at the top."""
        return self.tree.to_json(algorithm=self.algorithm, run_id=self.run_id, best=self.best.id,
                                 stats=self.stats.to_json())


class SearchEngine(Generic[S]):
    """Base of every search algorithm (MCTS and the baselines).

    ``proposers``: one or several (each edit records its proposer's name). ``evaluator``: sync or
    async. ``codec`` keys and serialises states (default: chosen from the initial state).
    ``store`` + ``run_id``: persist the search and resume it; ``run_config`` is extra identity
    (e.g. the task) that must match for a resume.
    """

    algorithm = "base"

    def __init__(self, proposers: Any, evaluator: Any, config: SearchConfig | None = None, *,
                 codec: StateCodec[S] | None = None, store: RunStore | None = None,
                 run_id: str | None = None, run_config: dict[str, Any] | None = None,
                 fingerprint: str | None = None) -> None:
        items = list(proposers) if isinstance(proposers, Sequence) else [proposers]
        if not items:
            raise SearchError("a search needs at least one proposer")
        self.proposers = [as_proposer(p) for p in items]
        names = [p.name for p in self.proposers]
        if len(set(names)) != len(names):
            raise SearchError(f"proposer names must be distinct (they label every edit): {names}")
        self.evaluator = as_evaluator(evaluator)
        self.config = config or SearchConfig()
        self.scale = Scale(self.config.value_mode)
        self.codec = codec
        self.store = store
        self.run_id = run_id
        self.run_config = dict(run_config or {})
        self.cache = EvaluationCache(self.evaluator, store=store, fingerprint=fingerprint)
        self.rng = random.Random(self.config.seed)
        self.tree: SearchTree[S] = SearchTree(codec or default_codec(None))
        self.duplicates = 0
        self.stop_reason: str | None = None
        self._base = SearchStats()
        self._tree_store: TreeStore | None = None
        self._t0 = 0.0

    # --- what algorithms override ----------------------------------------------------------

    async def select(self) -> Choice | None:
        """The next (parent, edit, key) to evaluate, or ``None`` when nothing (more) can be
        dispatched in this batch. Set :attr:`stop_reason` to say why the search should end."""
        raise NotImplementedError

    def algorithm_config(self) -> dict[str, Any]:
        """Settings of the algorithm (part of the run's identity in the store)."""
        return {}

    def policy_state(self) -> dict[str, Any]:
        """JSON state of the algorithm beyond the tree, checkpointed with every batch."""
        return {}

    def restore_policy(self, state: dict[str, Any]) -> None:
        """Restore :meth:`policy_state` output on resume."""

    def on_dispatch(self, node: Node[S]) -> None:
        """``node`` (pending) is about to be evaluated (MCTS adds virtual loss here)."""

    def on_complete(self, node: Node[S]) -> None:
        """``node``'s evaluation finished, before it is backed up."""

    # --- proposals ---------------------------------------------------------------------------

    async def next_edit(self, node: Node[S],
                        choose: Callable[[int], int] | None = None) -> tuple[Edit[S], str] | None:
        """An untried edit of ``node`` leading to a state new to the tree, or ``None`` once the
        proposers have nothing new for it. ``choose(n)`` picks which of the ``n`` queued edits to
        take (default: the first, i.e. highest prior, then proposer order)."""
        while True:
            while node.pending_edits:
                index = 0 if choose is None else choose(len(node.pending_edits))
                edit, key = node.pending_edits.pop(index)
                if key in self.tree.by_key:
                    self.duplicates += 1
                    continue
                return edit, key
            if node.proposals_exhausted:
                return None
            limit = self.config.max_proposal_rounds
            if limit is not None and node.proposal_rounds >= limit:
                node.proposals_exhausted = True
                return None
            fresh = await self._propose(node)
            node.proposal_rounds += 1
            if not fresh:
                node.proposals_exhausted = True
                return None
            node.pending_edits = fresh

    async def _propose(self, node: Node[S]) -> list[tuple[Edit[S], str]]:
        k = self.config.proposals_per_round
        batches = await asyncio.gather(*(maybe_await(p.propose(node, k)) for p in self.proposers))
        tagged: list[list[Edit[S]]] = []
        for proposer, edits in zip(self.proposers, batches, strict=True):
            out = []
            for edit in edits or ():
                if not isinstance(edit, Edit):
                    raise SearchError(f"proposer {proposer.name!r} returned {type(edit).__name__}, "
                                      "not an Edit")
                out.append(edit if edit.proposer else edit.with_proposer(proposer.name))
            tagged.append(out)
        # Round-robin across proposers so a prolific proposer cannot crowd out the others while
        # widening admits only a few children; then the highest priors first (stable).
        merged = [e for group in _interleave(tagged) for e in group]
        seen: set[str] = set()
        fresh: list[tuple[Edit[S], str]] = []
        for edit in merged:
            key = self.tree.codec.key(edit.state)
            if key in seen or key in self.tree.by_key:
                self.duplicates += 1
                continue
            seen.add(key)
            fresh.append((edit, key))
        given = [e.prior for e, _ in fresh if e.prior is not None]
        default = sum(given) / len(given) if given else 1.0
        fresh.sort(key=lambda ek: -(ek[0].prior if ek[0].prior is not None else default))
        return fresh

    # --- running -----------------------------------------------------------------------------

    def run_sync(self, initial: S) -> SearchResult[S]:
        """:meth:`run` for callers without an event loop."""
        return asyncio.run(self.run(initial))

    async def run(self, initial: S) -> SearchResult[S]:
        """Search from ``initial`` (or continue the stored run ``run_id``) until the budget ends."""
        self._t0 = time.monotonic()
        if self.codec is None:
            self.codec = default_codec(initial)
        self.tree = SearchTree(self.codec)
        root_key = self.codec.key(initial)
        if self.store is not None:
            self._open_run(root_key)
        try:
            if not self.tree.nodes:
                await self._start(initial, root_key)
            await self._loop()
            best = await self._finalise()
            result = SearchResult(self.algorithm, best, self.tree, self.stats(), self.run_id, self.history())
            if self.store is not None and self.run_id is not None:
                summary = {"best": best.id, "stats": result.stats.to_json(),
                           "best_evaluation": result.best_evaluation.to_dict()}
                self.store.finish_run(self.run_id, "done", summary)
            return result
        except BaseException:
            if self.store is not None and self.run_id is not None:
                with contextlib.suppress(StoreError):
                    self.store.finish_run(self.run_id, "failed")
            raise

    def identity(self, root_key: str) -> dict[str, Any]:
        """What must be equal for a stored run to be continued."""
        # Flat, so the store's "config differs" message names the very setting that changed.
        return {"algorithm": self.algorithm, **self.config.to_json(identity=True),
                "algorithm_config": self.algorithm_config(), "evaluator": self.cache.fingerprint,
                "proposers": [p.name for p in self.proposers], "root": root_key,
                "extra": jsonable(self.run_config)}

    def _open_run(self, root_key: str) -> None:
        assert self.store is not None
        try:
            self.run_id = self.store.start_run(RUN_KIND, self.identity(root_key), self.run_id)
        except StoreError as exc:
            raise ResumeError(f"cannot start or resume search run {self.run_id!r}: {exc}") from exc
        self._tree_store = TreeStore(self.store, self.run_id)
        nodes = self._tree_store.node_dicts()
        if not nodes:
            return
        self.tree = SearchTree.from_node_dicts(nodes, self.tree.codec)
        for node in self.tree.nodes:
            for i, sample in enumerate(node.samples):
                self.cache.remember(node.key, i, sample)
            if node.status == REJECTED:
                node.exhausted = True
        rng = self._tree_store.checkpoint("search.rng")
        if rng is not None:
            self.rng.setstate((rng[0], tuple(rng[1]), rng[2]))
        counters = self._tree_store.checkpoint("search.counters", {})
        self._base = SearchStats(evaluator_calls=counters.get("evaluator_calls", 0),
                                 cache_hits=counters.get("cache_hits", 0),
                                 seconds=counters.get("seconds", 0.0),
                                 resumes=counters.get("resumes", 0) + 1)
        self.duplicates = counters.get("duplicates", 0)
        self.restore_policy(self._tree_store.checkpoint("search.policy", {}))

    async def _start(self, initial: S, key: str) -> None:
        root = self.tree.add(initial, None, None, key=key)
        await self._evaluate_new(root)
        if root.status != ACCEPTED:
            raise SearchError(f"the initial state was rejected by the evaluator: {root.reason}")
        self.tree.backprop(root)
        self._persist([root])

    def elapsed(self) -> float:
        return self._base.seconds + time.monotonic() - self._t0

    def used(self) -> int:
        return sum(1 for n in self.tree.nodes if n.status != PENDING)

    async def _loop(self) -> None:
        cfg = self.config
        while True:
            used = self.used()
            if cfg.max_evaluations is not None and used >= cfg.max_evaluations:
                self.stop_reason = "budget"
                return
            if cfg.max_seconds is not None and self.elapsed() >= cfg.max_seconds:
                self.stop_reason = "time"
                return
            room = cfg.batch_size
            if cfg.max_evaluations is not None:
                room = min(room, cfg.max_evaluations - used)
            batch: list[Node[S]] = []
            while len(batch) < room:
                picked = await self.select()
                if picked is None:
                    break
                parent, edit, key = picked
                node = self.tree.add(edit.state, parent, edit, key=key)
                self.on_dispatch(node)
                batch.append(node)
            if not batch:
                self.stop_reason = self.stop_reason or "exhausted"
                return
            outcomes = await asyncio.gather(*(self._evaluate_new(n) for n in batch), return_exceptions=True)
            failure = next((o for o in outcomes if isinstance(o, BaseException)), None)
            if failure is not None:
                # Every evaluation of the batch has finished (and is in the store); the batch's
                # nodes are not written, so a resume replays the batch from stored results.
                raise failure
            for node in batch:
                self.on_complete(node)
                self.tree.backprop(node)
            self._persist(batch)

    async def _evaluate_new(self, node: Node[S]) -> None:
        """Evaluate a new node (``repeats`` samples) and apply the guardrails against its parent."""
        cfg, scale = self.config, self.scale
        samples: list[Evaluation] = []
        for i in range(cfg.repeats):
            ev = await self.cache.get(node.state, node.key, i)
            samples.append(ev)
            if not ev.ok:
                break
        node.samples = samples
        if not samples[-1].ok:
            self._reject(node, samples[-1].rejected_reason)
            return
        quantity = scale.quantity(samples)
        parent = node.parent
        guard = cfg.guardrails
        if parent is not None and parent.backed_value is not None:
            parent_q = scale.quantity_of(parent.backed_value)
            factor = scale.improvement_factor(quantity, parent_q)
            if guard.suspicious_factor is not None and factor > guard.suspicious_factor:
                reason = await self._recheck(node, factor)
                if reason:
                    self._reject(node, reason)
                    return
                quantity = scale.quantity(node.samples)
            if guard.regression_tolerance is not None:
                worse = scale.relative_regression(quantity, parent_q)
                if worse > guard.regression_tolerance:
                    self._reject(node, f"regression: {worse:.1%} worse than its parent "
                                       f"(tolerance {guard.regression_tolerance:.0%})")
                    return
        node.status = ACCEPTED
        node.value = node.backed_value = scale.value(quantity)

    async def _recheck(self, node: Node[S], factor: float) -> str:
        """Re-verify a suspiciously large improvement; returns a rejection reason or ''."""
        guard = self.config.guardrails
        what = f"suspicious {factor:.3g}x improvement over its parent"
        if guard.check is not None:
            ev = checked_evaluation(await maybe_await(guard.check(node.state, aggregate(node.samples))))
            if not ev.ok:
                return f"{what} not confirmed by the check: {ev.rejected_reason}"
            node.notes.append(f"{what}: confirmed by the check")
            return ""
        for _ in range(guard.suspicious_repeats):
            ev = await self.cache.get(node.state, node.key, len(node.samples))
            node.samples.append(ev)
            if not ev.ok:
                return f"{what} not confirmed on re-evaluation: {ev.rejected_reason}"
        node.notes.append(f"{what}: re-evaluated {guard.suspicious_repeats} more time(s), value is the mean")
        return ""

    def _reject(self, node: Node[S], reason: str) -> None:
        node.status = REJECTED
        node.reason = reason or "rejected"
        node.exhausted = True

    # --- the end -----------------------------------------------------------------------------

    async def _finalise(self) -> Node[S]:
        """Re-measure the best states, then declare the winner (ties go to fewer edits)."""
        cfg, scale = self.config, self.scale
        remeasured = {int(i) for i in self._checkpoint("search.remeasured", [])}
        if cfg.final_top_k > 0 and cfg.final_repeats > 0:
            while True:
                ranked = sorted(self.tree.accepted(), key=lambda n: (-(n.value or 0.0), n.id))
                todo = [n for n in ranked[:cfg.final_top_k] if n.id not in remeasured]
                if not todo:
                    break
                await asyncio.gather(*(self._remeasure(n) for n in todo))
                remeasured.update(n.id for n in todo)
                self._persist(todo, remeasured=sorted(remeasured))
        self._remeasured = len(remeasured)
        checked = {int(k): str(v) for k, v in self._checkpoint("search.final_checked", {}).items()}
        while True:
            accepted = sorted(self.tree.accepted(), key=lambda n: (-(n.value or 0.0), n.id))
            if not accepted:
                raise SearchError("no state survived re-measurement and the final check (every candidate "
                                  "failed when measured or checked again)")
            best_q = scale.quantity_of(accepted[0].value or 0.0)
            ties = [n for n in accepted
                    if scale.tied(scale.quantity_of(n.value or 0.0), best_q, cfg.tie_tolerance)]
            winner = min(ties, key=lambda n: (n.depth, n.id))
            if cfg.final_check is None or winner.parent is None:
                return winner
            if winner.id not in checked:
                ev = checked_evaluation(await maybe_await(cfg.final_check(winner.state)))
                checked[winner.id] = "" if ev.ok else (ev.rejected_reason or "rejected")
                if ev.ok:
                    winner.notes.append("passed the final check")
                else:
                    winner.status = REJECTED
                    winner.reason = f"failed the final check: {checked[winner.id]}"
                self._persist([winner], final_checked={str(k): v for k, v in checked.items()})
            elif checked[winner.id]:  # resumed: failed before (its status was persisted as rejected)
                winner.status = REJECTED
                winner.reason = f"failed the final check: {checked[winner.id]}"
            if not checked[winner.id]:
                return winner

    async def _remeasure(self, node: Node[S]) -> None:
        for _ in range(self.config.final_repeats):
            ev = await self.cache.get(node.state, node.key, len(node.samples))
            node.samples.append(ev)
            if not ev.ok:
                node.status = REJECTED
                node.reason = f"failed re-measurement: {ev.rejected_reason}"
                return
        node.value = self.scale.value(self.scale.quantity(node.samples))

    # --- bookkeeping -------------------------------------------------------------------------

    def _checkpoint(self, key: str, default: Any) -> Any:
        return default if self._tree_store is None else self._tree_store.checkpoint(key, default)

    def stats(self) -> SearchStats:
        nodes = self.tree.evaluated()
        return SearchStats(
            unique_evaluations=len(nodes),
            evaluator_calls=self._base.evaluator_calls + self.cache.calls,
            cache_hits=self._base.cache_hits + self.cache.hits,
            duplicates=self.duplicates,
            accepted=sum(1 for n in nodes if n.status == ACCEPTED),
            rejected=sum(1 for n in nodes if n.status == REJECTED),
            remeasured=getattr(self, "_remeasured", 0),
            resumes=self._base.resumes,
            seconds=self.elapsed(),
            stop_reason=self.stop_reason or "",
        )

    def _persist(self, nodes: list[Node[S]], **extra: Any) -> None:
        if self._tree_store is None:
            return
        stats = self.stats()
        checkpoint: dict[str, Any] = {
            "search.rng": jsonable(self.rng.getstate()),
            "search.counters": {"evaluator_calls": stats.evaluator_calls, "cache_hits": stats.cache_hits,
                                "duplicates": stats.duplicates, "seconds": stats.seconds,
                                "resumes": stats.resumes},
            "search.policy": jsonable(self.policy_state()),
        }
        checkpoint.update({f"search.{k}": v for k, v in extra.items()})
        self._tree_store.save([n.to_dict(self.tree.codec) for n in nodes], checkpoint)

    def history(self) -> list[dict[str, Any]]:
        """Progress in evaluation order: each node's quantity and the best accepted one so far
        (as first measured), for "objective over evaluations" plots."""
        out: list[dict[str, Any]] = []
        best: float | None = None
        for i, node in enumerate(self.tree.evaluated(), start=1):
            q = None if node.backed_value is None else self.scale.quantity_of(node.backed_value)
            if node.backed_value is not None and (best is None or node.backed_value > best):
                best = node.backed_value
            out.append({"evaluations": i, "node": node.id, "accepted": node.backed_value is not None,
                        "quantity": q, "best": None if best is None else self.scale.quantity_of(best)})
        return out


def _interleave(groups: list[list[Any]]) -> list[list[Any]]:
    """Round-robin rows: [[a0, b0], [a1, b1], [a2], ...] from [[a0, a1, a2], [b0, b1]]."""
    rows: list[list[Any]] = []
    for i in range(max((len(g) for g in groups), default=0)):
        rows.append([g[i] for g in groups if i < len(g)])
    return rows
