"""The operator registry: one decorator, the built-in modules and the ``veriforge.optiml.operators``
entry-point group, loaded lazily and once.

An operator is a function ``(source, findings) -> list[EditProposal]`` registered with
:func:`operator`, which records what the search needs to know about it: its name, its place in the
proposal order, the diagnosis findings that motivate it and whether it restructures the kernel
(changes how work maps onto threads) or only tunes it. The first call that needs the registry
imports every built-in module of this package (``_``-prefixed modules hold shared helpers and
register nothing) and then every entry point of the group, so ``import veriforge.optiml`` and
``import veriforge.optiml.operators`` stay cheap.

A third-party package adds operators with an entry point (``pyproject.toml``)::

    [project.entry-points."veriforge.optiml.operators"]
    halve_blocks = "my_package.my_operators"          # a module whose functions use @operator
    # or: halve_blocks = "my_package.my_operators:halve_edits"   (a function, decorated or not)

A plug-in that fails to load, registers a taken name, raises on a source or returns something that
is not a list of :class:`EditProposal` costs only its own edits: a warning names the entry point
and the search goes on.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import threading
import types
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ENTRY_POINT_GROUP", "BuiltinProposer", "EditFunction", "EditProposal", "OperatorSpec", "OperatorWarning",
           "motivating_findings", "operator", "operator_names", "propose_edits", "refresh", "registered"]

ENTRY_POINT_GROUP = "veriforge.optiml.operators"
BUILTIN_PACKAGE = "veriforge.optiml.operators"

_log = logging.getLogger("veriforge.optiml.operators")


@dataclass(frozen=True)
class EditProposal:
    """A transformed source with the story of the edit."""

    operator: str
    source: str
    description: str
    evidence: dict[str, Any] = field(default_factory=dict)
    prior: float = 1.0


EditFunction = Callable[[str, Sequence[Any]], list[EditProposal]]


class OperatorWarning(UserWarning):
    """An operator plug-in could not be loaded or misbehaved; its edits are skipped."""


@dataclass(frozen=True)
class OperatorSpec:
    """One registered operator.

    ``order`` places its edits in the proposal list (lower first; the built-ins use 10..120, a
    plug-in defaults to 1000): edits with equal priors are tried in this order and, when two
    operators produce the same text, the earlier one keeps it. ``motives`` are the diagnosis finding
    kinds that motivate it (:func:`motivating_findings` of them is the evidence its edits record and
    what their priors grow with). ``restructuring``: it changes how work maps onto threads (as
    opposed to tuning constants and annotations). ``origin`` is ``"builtin"`` or the entry point
    (``name = value``) that brought it.
    """

    name: str
    function: EditFunction
    order: int = 1000
    motives: frozenset[str] = frozenset()
    restructuring: bool = False
    module: str = ""
    origin: str = "builtin"

    @property
    def summary(self) -> str:
        """The first line of the function's docstring ("" without one)."""
        doc = (self.function.__doc__ or "").strip()
        return doc.split("\n", 1)[0]

    def motivating(self, findings: Iterable[Any]) -> list[dict[str, Any]]:
        return motivating_findings(findings, set(self.motives))

    def __call__(self, source: str, findings: Sequence[Any] = ()) -> list[EditProposal]:
        return self.function(source, findings)


def motivating_findings(findings: Iterable[Any], kinds: set[str] | frozenset[str]) -> list[dict[str, Any]]:
    """The findings of ``kinds`` (dicts or :class:`~veriforge.optiml.diagnosis.Finding`), trimmed to what an
    edit's evidence records; every operator's prior grows with their severities."""
    out = []
    for f in findings or ():
        d = f if isinstance(f, dict) else f.to_dict()
        if d.get("kind") in kinds:
            out.append({k: d.get(k) for k in ("kind", "severity", "line", "message")})
    return out


_specs: dict[str, OperatorSpec] = {}
_loaded_entry_points: set[tuple[str, str]] = set()
_builtins_loaded = False
_lock = threading.RLock()
_origin = threading.local()  # the entry point being loaded, for the specs it registers


def operator(name: str, *, order: int = 1000, motives: Iterable[str] = (), restructuring: bool = False
             ) -> Callable[[EditFunction], EditFunction]:
    """Register the decorated ``(source, findings) -> list[EditProposal]`` function as operator ``name``.

    ``name`` must be new (``ValueError`` otherwise: a plug-in cannot replace a built-in); see
    :class:`OperatorSpec` for the other fields. The function is returned unchanged, with its spec as
    ``function.operator_spec``.
    """

    def register(function: EditFunction) -> EditFunction:
        module = getattr(function, "__module__", "") or ""
        origin = "builtin" if module.startswith(BUILTIN_PACKAGE + ".") else \
            getattr(_origin, "value", None) or f"module {module}"
        spec = OperatorSpec(name, function, order, frozenset(motives), restructuring, module, origin)
        with _lock:
            known = _specs.get(name)
            if known is not None and known.function is not function:
                raise ValueError(f"operator {name!r} is already registered (by {known.module}, {known.origin})")
            _specs[name] = spec
        function.operator_spec = spec  # type: ignore[attr-defined]
        return function

    return register


def _ensure_loaded() -> None:
    global _builtins_loaded
    with _lock:
        if not _builtins_loaded:
            _builtins_loaded = True
            package = importlib.import_module(BUILTIN_PACKAGE)
            for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
                if not info.name.startswith("_") and info.name != "registry":
                    importlib.import_module(f"{BUILTIN_PACKAGE}.{info.name}")
            _load_entry_points()


def refresh() -> list[str]:
    """Load the entry points not loaded yet (a package installed after the first use); returns the
    names of the operators that were added."""
    with _lock:
        _ensure_loaded()
        before = set(_specs)
        _load_entry_points()
        return sorted(set(_specs) - before)


def _load_entry_points() -> None:
    from importlib.metadata import entry_points

    try:
        found = list(entry_points(group=ENTRY_POINT_GROUP))
    except Exception as exc:  # a broken distribution's metadata must not stop the search
        _warn(f"cannot read the {ENTRY_POINT_GROUP!r} entry points ({type(exc).__name__}: {exc}); "
              f"only the built-in operators are available")
        return
    for ep in found:
        key = (ep.name, ep.value)
        if key in _loaded_entry_points:
            continue
        _loaded_entry_points.add(key)
        where = f"{ep.name} = {ep.value}"
        _origin.value = f"entry point {where}"
        try:
            obj = ep.load()
            if not isinstance(obj, types.ModuleType) and not hasattr(obj, "operator_spec"):
                if not callable(obj):
                    raise TypeError(f"{ep.value} is neither a module nor a function")
                operator(ep.name)(obj)  # a plain function: registered under the entry point's name
        except Exception as exc:
            _warn(f"OptiML operator plug-in {where!r} (entry point group {ENTRY_POINT_GROUP!r}) failed to load: "
                  f"{type(exc).__name__}: {exc}; its operators are skipped")
        finally:
            _origin.value = None


def _warn(message: str) -> None:
    _log.warning(message)
    warnings.warn(message, OperatorWarning, stacklevel=3)


def registered() -> list[OperatorSpec]:
    """Every operator (built-ins and plug-ins), in proposal order."""
    _ensure_loaded()
    with _lock:
        return sorted(_specs.values(), key=lambda s: (s.order, s.name))


def operator_names() -> tuple[str, ...]:
    return tuple(s.name for s in registered())


def propose_edits(source: str, findings: Sequence[Any] = (), operators: Sequence[str] | None = None
                  ) -> list[EditProposal]:
    """Every edit of ``source`` by ``operators`` (default: all registered), deduplicated by resulting
    text, original excluded, in the registry's order.

    An operator that fails on a source it does not understand costs only its own edits: the error
    is logged (a plug-in's with a warning naming its entry point) and the other operators still
    propose (a search must not die on one pattern reader).
    """
    specs = {s.name: s for s in registered()}
    names = list(specs) if operators is None else list(operators)
    unknown = [name for name in names if name not in specs]
    if unknown:
        raise ValueError(f"unknown operators {sorted(unknown)}; known: {', '.join(specs)}")
    chosen = [specs[name] for name in names]
    seen = {source}
    out = []
    for spec in chosen:
        try:
            edits = spec(source, findings)
            if not isinstance(edits, list | tuple) or not all(isinstance(e, EditProposal) for e in edits):
                raise TypeError(f"returned {type(edits).__name__}, not a list of EditProposal")
        except Exception as exc:  # one operator's parse failure must not end the search
            message = (f"operator {spec.name} failed on this source ({type(exc).__name__}: {exc}); "
                       f"its edits are skipped")
            if spec.origin == "builtin":
                _log.warning(message)
            else:
                _warn(f"{message} [plug-in {spec.origin}]")
            continue
        for edit in edits:
            if edit.source not in seen:
                seen.add(edit.source)
                out.append(edit)
    return out


class BuiltinProposer:
    """The registered operators (built-ins and plug-ins) as a :class:`veriforge.search.Proposer`
    (name ``"builtin"``: no model involved).

    Reads the parent's diagnosis from ``node.evaluation.details["findings"]`` (what the OptiML-X
    evaluator stores) so each edit records the findings that motivated it and gets a PUCT prior
    that grows with their severity. Returns every edit (the engine widens progressively, so the
    order — highest prior first, then operator order — is what matters). ``operators`` limits it to
    those names (default: every registered operator, looked up at each proposal).
    """

    name = "builtin"

    def __init__(self, operators: Sequence[str] | None = None) -> None:
        self.operators = None if operators is None else tuple(operators)

    def propose(self, node: Any, k: int) -> list[Any]:
        from veriforge.core.types import Candidate
        from veriforge.search.interfaces import Edit

        state = node.state
        source = state.source if isinstance(state, Candidate) else str(state)
        ev = node.evaluation
        findings = (ev.details.get("findings") if ev is not None else None) or []
        edits = []
        for p in propose_edits(source, findings, self.operators):
            cand = Candidate(source=p.source, language=getattr(state, "language", "cuda"),
                             metadata={"operator": p.operator, "description": p.description},
                             parent=getattr(state, "hash", None))
            edits.append(Edit(cand, description=p.description, evidence=p.evidence, prior=p.prior,
                              metadata={"operator": p.operator}))
        return edits
