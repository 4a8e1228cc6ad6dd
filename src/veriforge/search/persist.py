"""Keeping a search in the run store so a killed search continues where it stopped.

A search run is a run of kind :data:`RUN_KIND` in the store. Every node is written as a record
(namespace :data:`NODE_NAMESPACE`, tied to the run) when its evaluation finishes, together with
the engine's checkpoint (random generator, counters, the algorithm's own state) in one
transaction, so the stored tree and the checkpoint always agree. Evaluations themselves go to the
store's evaluations table as they complete (see :mod:`veriforge.search.evaluation`): an
evaluation finished just before a crash is not lost even though its node was not yet written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from veriforge.search.errors import ResumeError
from veriforge.search.interfaces import StateCodec
from veriforge.search.tree import SearchTree

if TYPE_CHECKING:
    from veriforge.core.store import RunStore

__all__ = ["NODE_NAMESPACE", "RUN_KIND", "TreeStore", "load_tree"]

RUN_KIND = "search"
NODE_NAMESPACE = "search.node"


class TreeStore:
    """The stored nodes and checkpoint of one search run."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self.store = store
        self.run_id = run_id

    def node_dicts(self) -> list[dict[str, Any]]:
        return [r.value for r in self.store.records(NODE_NAMESPACE, run_id=self.run_id)]

    def save(self, nodes: Iterable[dict[str, Any]], checkpoint: dict[str, Any]) -> None:
        """Write nodes and checkpoint values atomically."""
        with self.store.transaction():
            for node in nodes:
                self.store.put_record(NODE_NAMESPACE, f"{self.run_id}/{node['id']:08d}", node,
                                      run_id=self.run_id)
            for key, value in checkpoint.items():
                self.store.set_state(self.run_id, key, value)

    def checkpoint(self, key: str, default: Any = None) -> Any:
        return self.store.get_state(self.run_id, key, default)


def load_tree(store: RunStore, run_id: str, codec: StateCodec[Any]) -> SearchTree[Any]:
    """The tree of a stored search run (finished or not), e.g. to report on it."""
    nodes = TreeStore(store, run_id).node_dicts()
    if not nodes:
        raise ResumeError(f"run {run_id!r} has no stored search nodes")
    return SearchTree.from_node_dicts(nodes, codec)
