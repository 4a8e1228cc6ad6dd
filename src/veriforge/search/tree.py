"""The search tree: evaluated states linked by the edits that produced them.

Every node is an evaluated state. Its statistics (``visits``, ``losses``, ``value_sum``,
``best``) are a pure function of the tree: each node, when its evaluation completed, was backed
up once along its ancestors (``backed_value`` records the value it was backed up with). So the
stored form of a node never needs updating when descendants arrive, and rebuilding a tree from
its nodes in creation order (:meth:`SearchTree.from_json`, resuming from the run store) replays
exactly the statistics the live search had.

Node JSON: ``id``, ``parent``, ``children``, ``depth``, ``key``, ``state``, ``edit`` (description,
proposer, evidence, prior, metadata), ``status`` (``accepted``/``rejected``/``pending``),
``reason``, ``evaluations`` (every sample), ``evaluation`` (their aggregate), ``value``,
``backed_value``, ``visits``, ``losses``, ``value_sum``, ``best``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from veriforge.search.errors import SearchError
from veriforge.search.interfaces import Edit, Evaluation, StateCodec
from veriforge.search.selection import MinMax

__all__ = ["ACCEPTED", "PENDING", "REJECTED", "TREE_FORMAT", "Node", "SearchTree", "aggregate"]

S = TypeVar("S")

PENDING, ACCEPTED, REJECTED = "pending", "accepted", "rejected"
TREE_FORMAT = "veriforge.search.tree/1"


def aggregate(samples: list[Evaluation]) -> Evaluation | None:
    """One evaluation summarising repeated ones: ok only if all were, mean objective and reward,
    the first sample's provenance and details plus ``samples`` and ``objective_spread``."""
    if not samples:
        return None
    ok = all(s.ok for s in samples)
    good = samples if ok else [s for s in samples if s.ok]

    def mean(name: str) -> float | None:
        vals = [getattr(s, name) for s in good if getattr(s, name) is not None]
        return math.fsum(vals) / len(vals) if vals else None

    details = dict(samples[0].details)
    details["samples"] = len(samples)
    objectives = [s.objective for s in good if s.objective is not None]
    if len(objectives) > 1:
        details["objective_spread"] = statistics.stdev(objectives)
    reason = next((s.rejected_reason for s in samples if not s.ok), "")
    return Evaluation(ok=ok, objective=mean("objective"), reward=mean("reward"),
                      provenance=samples[0].provenance, details=details, rejected_reason=reason)


@dataclass(eq=False)
class Node(Generic[S]):
    """One evaluated (or being evaluated) state in the tree.

    Proposers read ``state``, ``evaluation`` (with the evaluator's ``details``, e.g. profile
    evidence), ``edit`` (how this state was made), ``parent`` and ``depth``. The engine-private
    fields below the line are working memory that is not stored (rebuilt on resume).
    """

    id: int
    state: S
    key: str
    parent: Node[S] | None = None
    edit: dict[str, Any] | None = None
    depth: int = 0
    status: str = PENDING
    reason: str = ""
    samples: list[Evaluation] = field(default_factory=list)
    value: float | None = None
    backed_value: float | None = None
    visits: int = 0
    losses: int = 0
    value_sum: float = 0.0
    best: float | None = None
    children: list[Node[S]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # --- working memory, not serialised --------------------------------------------------------
    virtual: int = 0
    pending_edits: list[tuple[Edit[S], str]] = field(default_factory=list)
    proposal_rounds: int = 0
    proposals_exhausted: bool = False
    exhausted: bool = False

    @property
    def evaluation(self) -> Evaluation | None:
        """The aggregate of this node's evaluation samples."""
        return aggregate(self.samples)

    @property
    def accepted(self) -> bool:
        return self.status == ACCEPTED

    @property
    def objective(self) -> float | None:
        ev = self.evaluation
        return None if ev is None else ev.objective

    def path(self) -> list[Node[S]]:
        """Nodes from the root down to this one."""
        out: list[Node[S]] = []
        node: Node[S] | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        return out[::-1]

    def edits(self) -> list[dict[str, Any]]:
        """The edits from the root to this node, in order (the optimisation trajectory)."""
        return [n.edit for n in self.path() if n.edit is not None]

    def to_dict(self, codec: StateCodec[S]) -> dict[str, Any]:
        ev = self.evaluation
        return {
            "id": self.id,
            "parent": None if self.parent is None else self.parent.id,
            "children": [c.id for c in self.children],
            "depth": self.depth,
            "key": self.key,
            "state": codec.dump(self.state),
            "edit": self.edit,
            "status": self.status,
            "reason": self.reason,
            "notes": list(self.notes),
            "evaluations": [s.to_dict() for s in self.samples],
            "evaluation": None if ev is None else ev.to_dict(),
            "value": self.value,
            "backed_value": self.backed_value,
            "visits": self.visits,
            "losses": self.losses,
            "value_sum": self.value_sum,
            "best": self.best,
        }

    def __repr__(self) -> str:
        return (f"Node(id={self.id}, depth={self.depth}, status={self.status}, value={self.value}, "
                f"visits={self.visits}, children={len(self.children)})")


class SearchTree(Generic[S]):
    """Nodes by id and by key, with the backup statistics and value bounds."""

    def __init__(self, codec: StateCodec[S]) -> None:
        self.codec = codec
        self.nodes: list[Node[S]] = []
        self.by_key: dict[str, Node[S]] = {}
        self.bounds = MinMax()

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node[S]]:
        return iter(self.nodes)

    @property
    def root(self) -> Node[S]:
        if not self.nodes:
            raise SearchError("the search tree is empty")
        return self.nodes[0]

    def add(self, state: S, parent: Node[S] | None, edit: Edit[S] | None, key: str | None = None) -> Node[S]:
        """Create a pending node for ``state`` (its key must be new to the tree)."""
        key = key if key is not None else self.codec.key(state)
        if key in self.by_key:
            raise SearchError(f"state {key[:16]} is already node {self.by_key[key].id}")
        node = Node(id=len(self.nodes), state=state, key=key, parent=parent,
                    edit=None if edit is None else edit.info(),
                    depth=0 if parent is None else parent.depth + 1)
        self.nodes.append(node)
        self.by_key[key] = node
        if parent is not None:
            parent.children.append(node)
        return node

    def backprop(self, node: Node[S]) -> None:
        """Back ``node``'s finished evaluation up to the root (once per node).

        A node accepted when first evaluated (it has a ``backed_value``) adds one visit and that
        value to itself and every ancestor (``value_sum`` for mean backup, ``best`` for max
        backup); a rejected one adds a visit and a *loss* to its ancestors, so a node whose edits
        keep failing looks worse under mean backup. A node rejected later (by the final
        re-measure) keeps its original backup, so replaying a stored tree gives the same numbers.
        """
        if node.status == PENDING:
            raise SearchError(f"node {node.id} is still pending; it cannot be backed up")
        if node.backed_value is not None:
            v = node.backed_value
            self.bounds.update(v)
            anc: Node[S] | None = node
            while anc is not None:
                anc.visits += 1
                anc.value_sum += v
                anc.best = v if anc.best is None else max(anc.best, v)
                anc = anc.parent
        else:
            node.visits += 1
            node.losses += 1
            anc = node.parent
            while anc is not None:
                anc.visits += 1
                anc.losses += 1
                anc = anc.parent

    def evaluated(self) -> list[Node[S]]:
        """Nodes whose evaluation finished (accepted or rejected)."""
        return [n for n in self.nodes if n.status != PENDING]

    def accepted(self) -> list[Node[S]]:
        return [n for n in self.nodes if n.status == ACCEPTED]

    # --- JSON --------------------------------------------------------------------------------

    def to_json(self, **meta: Any) -> dict[str, Any]:
        """The whole tree as JSON (``meta`` adds top-level fields such as the algorithm)."""
        return {"format": TREE_FORMAT, **meta, "nodes": [n.to_dict(self.codec) for n in self.nodes]}

    @classmethod
    def from_json(cls, data: dict[str, Any], codec: StateCodec[S]) -> SearchTree[S]:
        """Rebuild a tree from :meth:`to_json` output (statistics are replayed, not trusted)."""
        if data.get("format") != TREE_FORMAT:
            raise SearchError(f"not a search tree (format {data.get('format')!r}, expected {TREE_FORMAT!r})")
        return cls.from_node_dicts(data["nodes"], codec)

    @classmethod
    def from_node_dicts(cls, nodes: list[dict[str, Any]], codec: StateCodec[S]) -> SearchTree[S]:
        tree = cls(codec)
        for expected, d in enumerate(sorted(nodes, key=lambda d: d["id"])):
            if d["id"] != expected:
                raise SearchError(f"stored tree is missing node {expected} (found {d['id']})")
            parent = None if d["parent"] is None else tree.nodes[d["parent"]]
            node = Node(id=d["id"], state=codec.load(d["state"]), key=d["key"], parent=parent,
                        edit=d["edit"], depth=d["depth"], status=d["status"], reason=d.get("reason", ""),
                        samples=[Evaluation.from_dict(e) for e in d.get("evaluations", [])],
                        value=d.get("value"), backed_value=d.get("backed_value"),
                        notes=list(d.get("notes", [])))
            tree.nodes.append(node)
            tree.by_key[node.key] = node
            if parent is not None:
                parent.children.append(node)
            if node.status != PENDING:
                tree.backprop(node)
        return tree
