"""Deduplication of generated tasks, before anything is verified.

Verification is the expensive step of a build (every implementation runs on the CPU runtime), and
a training set full of copies over-weights some problems and leaks between splits, so duplicates
are removed first, from the reference alone (the *problem*; implementations are answers to it):

* **exact**: the SHA-256 of the normalised reference — comments, docstrings and whitespace
  removed, tokens joined by single spaces. Two references that differ only in formatting or
  comments are the same problem.
* **structural**: the same token sequence after *alpha-renaming* local identifiers (``v0, v1, …``
  by first occurrence) and abstracting numeric literals to ``N``, while keeping keywords, type
  names, called function names (an identifier followed by ``(``), attribute names (after ``.``)
  and every operator. ``y[i] = a[i] + b[i]`` and ``out[k] = x[k] + z[k]`` collide; ``+`` vs ``*``,
  ``sinf`` vs ``cosf``, ``float`` vs ``double`` do not. Sizes and constants are configuration,
  not structure, so a C family that only changes a literal produces a duplicate. In PyTorch
  references a literal inside a call or an index (``torch.cumsum(x, dim=1)``, ``x[:, 0]``) is kept:
  there it selects an axis or an element, which changes the kernel; module-level size constants
  (``batch_size = 16``) are abstracted.
* **near** (within a family): Jaccard similarity of the sets of 5-token shingles of the normalised
  (concrete) token sequences ≥ :data:`NEAR_THRESHOLD` (0.95). One changed token in a ~40-token
  element-wise reference gives ≈ 0.8 (kept); an inclusive vs an exclusive scan gave 0.92 (kept: a
  different problem); one changed token in a reference of ≳ 200 tokens gives ≥ 0.95 (dropped).
  Computed exactly (not MinHash) with a size-ratio prefilter: ``J(A, B) ≤ min/max``.

A duplicate is skipped with the id of the task it duplicates (the first one in enumeration order,
which is deterministic). The same exact/structural keys of the **bundled** tasks
(``veriforge/data/tasks``) are checked too, so a generated task never reproduces a task of the
curated evaluation set.
"""

from __future__ import annotations

import hashlib
import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from veriforge.cuda.source_reader import blank

__all__ = ["NEAR_THRESHOLD", "SHINGLE", "DedupIndex", "Duplicate", "ReferenceKeys", "abstract_tokens",
           "bundled_index", "jaccard", "normalised_tokens", "reference_keys"]

NEAR_THRESHOLD = 0.95
"""Shingle-Jaccard at or above which two references of one family are near-duplicates."""

SHINGLE = 5
"""Tokens per shingle."""

_C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline int long
register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
bool true false size_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t half
__global__ __device__ __host__ __shared__ __restrict__ __constant__ __syncthreads __forceinline__
threadIdx blockIdx blockDim gridDim warpSize float2 float4 int2 int4 double2 include define pragma
""".split())

_PY_KEYWORDS = frozenset("""
False None True and as assert async await break class continue def del elif else except finally for from
global if import in is lambda nonlocal not or pass raise return try while with yield self super torch nn F
Model ModelNew forward get_inputs get_init_inputs int float bool range len
""".split())

_C_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[fFuUlL]*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')
  | (?P<op><<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%=<>!&|^~?:;,.()\[\]{}\#])
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)

@dataclass(frozen=True)
class Tok:
    kind: str  # "num" | "id" | "str" | "op"
    text: str


def _c_tokens(source: str) -> list[Tok]:
    text = blank(source, literals=False, squeeze=True)  # literals stay tokens
    out = []
    for m in _C_TOKEN.finditer(text):
        kind = m.lastgroup or "other"
        if kind == "ws":
            continue
        out.append(Tok("op" if kind == "other" else kind, m.group()))
    return out


def _py_tokens(source: str) -> list[Tok]:
    """Python tokens without comments, docstrings (statement-level strings) and layout tokens."""
    out: list[Tok] = []
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENCODING, tokenize.ENDMARKER}
    prev_sig: int | None = tokenize.NEWLINE  # the previous significant token type
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return _c_tokens(re.sub(r"#[^\n]*", " ", source))  # unparsable: a rough, still deterministic form
    for t in toks:
        if t.type in skip:
            if t.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                prev_sig = tokenize.NEWLINE
            continue
        if t.type == tokenize.STRING and prev_sig == tokenize.NEWLINE:
            continue  # a docstring or a bare string statement says nothing about the computation
        prev_sig = t.type
        kind = {tokenize.NUMBER: "num", tokenize.NAME: "id", tokenize.STRING: "str"}.get(t.type, "op")
        out.append(Tok(kind, t.string))
    return out


def _tokens(source: str, kind: str) -> list[Tok]:
    return _py_tokens(source) if kind == "torch2cuda" else _c_tokens(source)


def normalised_tokens(source: str, kind: str = "c2cuda") -> list[str]:
    """The reference's tokens without comments, docstrings and whitespace."""
    return [t.text for t in _tokens(source, kind)]


def abstract_tokens(source: str, kind: str = "c2cuda") -> list[str]:
    """Tokens with local identifiers alpha-renamed and numeric literals abstracted (see module doc)."""
    toks = _tokens(source, kind)
    keywords = _PY_KEYWORDS if kind == "torch2cuda" else _C_KEYWORDS
    names: dict[str, str] = {}
    out: list[str] = []
    depth = 0
    for k, t in enumerate(toks):
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth = max(0, depth - 1)
        if t.kind == "num":
            # PyTorch: a literal inside a call or index (``dim=1``, ``x[:, 0]``) is semantics, not size
            out.append(t.text if kind == "torch2cuda" and depth > 0 else "N")
        elif t.kind == "id":
            nxt = toks[k + 1].text if k + 1 < len(toks) else ""
            prv = toks[k - 1].text if k else ""
            if t.text in keywords or nxt == "(" or prv == "." or t.text.startswith("__"):
                out.append(t.text)  # keywords, calls, attributes: what the code does
            else:
                out.append(names.setdefault(t.text, f"v{len(names)}"))
        else:
            out.append(t.text)
    return out


def _sha(tokens: Iterable[str], kind: str) -> str:
    return hashlib.sha256((kind + "\x00" + " ".join(tokens)).encode()).hexdigest()


@dataclass(frozen=True)
class ReferenceKeys:
    """The dedup keys of one reference."""

    exact: str
    structural: str
    shingles: frozenset[int]


def reference_keys(source: str, kind: str) -> ReferenceKeys:
    toks = normalised_tokens(source, kind)
    grams = {int.from_bytes(hashlib.blake2b("\x00".join(toks[i:i + SHINGLE]).encode(), digest_size=8).digest(),
                            "big") for i in range(max(1, len(toks) - SHINGLE + 1))}  # stable across processes
    return ReferenceKeys(_sha(toks, kind), _sha(abstract_tokens(source, kind), kind), frozenset(grams))


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass(frozen=True)
class Duplicate:
    """Why a task was skipped: ``rule`` is exact | structural | near | bundled; ``of`` the kept id."""

    rule: str
    of: str
    similarity: float = 1.0

    @property
    def reason(self) -> str:
        what = {"exact": "same normalised reference as",
                "structural": "same structure (identifiers and literals abstracted) as",
                "near": f"shingle Jaccard {self.similarity:.2f} >= {NEAR_THRESHOLD} with",
                "bundled": "reference matches the bundled (curated evaluation) task"}[self.rule]
        return f"{what} {self.of}"


@dataclass
class DedupIndex:
    """Keys of the tasks seen so far; :meth:`check_and_add` decides duplicate-or-new in one step."""

    near_threshold: float = NEAR_THRESHOLD
    structural: bool = True
    bundled: dict[str, str] = field(default_factory=dict)  # exact/structural key -> bundled task ref
    _exact: dict[str, str] = field(default_factory=dict)
    _struct: dict[str, str] = field(default_factory=dict)
    _near: dict[str, list[tuple[str, frozenset[int]]]] = field(default_factory=dict)

    def check(self, task_id: str, family: str, keys: ReferenceKeys) -> Duplicate | None:
        for key in (keys.exact, keys.structural):
            if key in self.bundled:
                return Duplicate("bundled", self.bundled[key])
        if keys.exact in self._exact:
            return Duplicate("exact", self._exact[keys.exact])
        if self.structural and keys.structural in self._struct:
            return Duplicate("structural", self._struct[keys.structural])
        if self.near_threshold <= 1.0:
            n = len(keys.shingles)
            for other_id, other in self._near.get(family, ()):
                m = len(other)
                if min(n, m) < self.near_threshold * max(n, m):
                    continue  # J <= min/max < threshold
                sim = jaccard(keys.shingles, other)
                if sim >= self.near_threshold:
                    return Duplicate("near", other_id, sim)
        return None

    def add(self, task_id: str, family: str, keys: ReferenceKeys) -> None:
        self._exact.setdefault(keys.exact, task_id)
        self._struct.setdefault(keys.structural, task_id)
        self._near.setdefault(family, []).append((task_id, keys.shingles))

    def check_and_add(self, task_id: str, family: str, keys: ReferenceKeys) -> Duplicate | None:
        dup = self.check(task_id, family, keys)
        if dup is None:
            self.add(task_id, family, keys)
        return dup


def bundled_index(root: str | Path | None = None) -> dict[str, str]:
    """Exact and structural keys of every bundled task → ``family/id`` (the leak guard)."""
    from veriforge.cuda.tasks.load import bundled_root

    base = Path(root) if root is not None else bundled_root()
    out: dict[str, str] = {}
    for kind, ref_name in (("c2cuda", "reference.c"), ("torch2cuda", "reference.py")):
        for ref in sorted((base / kind).glob(f"*/{ref_name}")):
            keys = reference_keys(ref.read_text(), kind)
            name = f"{kind}/{ref.parent.name}"
            out.setdefault(keys.exact, name)
            out.setdefault(keys.structural, name)
    return out
