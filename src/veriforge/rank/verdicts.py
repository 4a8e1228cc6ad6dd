"""Reading a judge's verdict out of free text, or refusing to.

Judges answer in many shapes: MT-Bench style ``[[A]]``, JSON (``{"winner": "B"}``), prose
("Response A is better"), or a bare letter. :func:`parse_verdict` accepts all of these, in that
order of trust: a bare answer, then JSON, then ``[[...]]`` markers, then prose. Within a form, two
*different* verdicts (``[[A]]`` … ``[[B]]``; "A is better at X, but B is better overall") make the
text **ambiguous**, and an ambiguous or unrecognised text is a parse failure — reported with a
reason and never turned into a win for whichever letter happened to be found first.

Verdicts are in the frame of the prompt: ``A`` is the response shown first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from veriforge.rank.outcomes import Verdict

__all__ = ["ParsedVerdict", "VerdictParser", "normalize_verdict", "parse_verdict", "regex_parser"]


@dataclass(frozen=True)
class ParsedVerdict:
    """A verdict (``A``, ``B``, ``tie``) or ``None`` with ``error`` saying why the text was not read."""

    verdict: Verdict | None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.verdict is not None


VerdictParser = Callable[[str], "ParsedVerdict | str | None"]
"""A parse rule: text → :class:`ParsedVerdict` (or a bare ``"A"``/``"B"``/``"tie"``, or ``None``)."""

_TIE_WORDS = {"tie", "c", "draw", "equal", "equally good", "both", "same", "neither better"}


def normalize_verdict(value: Any) -> Verdict | None:
    """Map the many spellings of a verdict (``"Response A"``, ``"assistant_b"``, ``"[[C]]"``,
    ``"draw"``, ``1``/``2``) to ``A``, ``B`` or ``tie``; ``None`` if it is none of them."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return {1: "A", 2: "B", 0: "tie"}.get(value)
    if not isinstance(value, str):
        return None
    text = re.sub(r"[\[\]()*\"'`.:!]", " ", value).strip().lower()
    text = re.sub(r"[\s_\-]+", " ", text)
    text = re.sub(r"^(response|assistant|answer|output|candidate|option|model) ", "", text)
    if text in ("a", "1", "first"):
        return "A"
    if text in ("b", "2", "second"):
        return "B"
    if text in _TIE_WORDS:
        return "tie"
    return None


def _unique(found: list[Verdict], form: str) -> ParsedVerdict | None:
    if not found:
        return None
    distinct = list(dict.fromkeys(found))
    if len(distinct) > 1:
        return ParsedVerdict(None, f"ambiguous: {form} gives conflicting verdicts ({', '.join(distinct)})")
    return ParsedVerdict(distinct[0])


_JSON_KEYS = ("winner", "verdict", "better", "better_response", "preferred", "preference", "choice", "answer")
_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.S | re.I)
_FLAT_OBJECT = re.compile(r"\{[^{}]*\}", re.S)
_MARKER = re.compile(r"\[\[\s*([^\[\]]{1,20}?)\s*\]\]")
# Keywords match in any case, the verdict letter only as a capital: "the choice is a hard one" and
# "this data is better" must not read as verdicts for A.
_SUBJECT = r"(?<![A-Za-z])(?i:response|assistant|answer|output|candidate|option)?\s*\(?([AB])\)?"
_PROSE_WIN = re.compile(
    _SUBJECT + r"(?i:\s+(?:is|was)\s+(?:clearly\s+|much\s+|slightly\s+|somewhat\s+|overall\s+)?"
    r"(?:the\s+)?(?:better|superior|stronger|preferable|preferred|more\s+(?:accurate|correct|helpful)))\b",
)
_PROSE_LABEL = re.compile(
    r"(?i:winner|verdict|final\s+verdict|final\s+answer|better\s+response|preferred\s+response|"
    r"my\s+choice|choice|preference)\s*(?:is|:|=)\s*[*\s]*(?i:response|assistant|answer|option)?\s*"
    r"\(?([AB]|(?i:tie|draw))\)?(?![A-Za-z])",
)
_PROSE_TIE = re.compile(
    r"\b(?:it\s*(?:'s|\s+is)\s+a\s+(?:tie|draw)|(?:both|the\s+two)\s+(?:responses\s+|answers\s+)?are\s+"
    r"(?:equally\s+(?:good|correct|strong)|of\s+equal\s+quality)|equally\s+good)\b",
    re.I,
)


def _from_json(text: str) -> ParsedVerdict | None:
    candidates = [text.strip(), *_FENCED.findall(text), *_FLAT_OBJECT.findall(text)]
    found: list[Verdict] = []
    seen_objects = 0
    for chunk in candidates:
        try:
            obj = json.loads(chunk)
        except (ValueError, TypeError):
            continue
        if not isinstance(obj, dict):
            continue
        seen_objects += 1
        for key in _JSON_KEYS:
            for k, v in obj.items():
                if k.lower() == key:
                    verdict = normalize_verdict(v)
                    if verdict is not None:
                        found.append(verdict)
    if not found and seen_objects:
        return None  # JSON without a verdict field: let the other forms try
    return _unique(found, "JSON")


def parse_verdict(text: str) -> ParsedVerdict:
    """The verdict in a judge's reply, or a failure with the reason (see the module docstring)."""
    if not text or not text.strip():
        return ParsedVerdict(None, "empty reply")
    bare = normalize_verdict(text.strip())
    if bare is not None:
        return ParsedVerdict(bare)
    result = _from_json(text)
    if result is not None:
        return result
    markers: list[Verdict] = [v for m in _MARKER.findall(text) if (v := normalize_verdict(m)) is not None]
    result = _unique(markers, "[[...]] markers")
    if result is not None:
        return result
    prose: list[Verdict] = [m.upper() for m in _PROSE_WIN.findall(text)]  # type: ignore[misc]
    prose += [v for m in _PROSE_LABEL.findall(text) if (v := normalize_verdict(m)) is not None]
    prose += ["tie"] * len(_PROSE_TIE.findall(text))
    result = _unique(prose, "the prose")
    if result is not None:
        return result
    return ParsedVerdict(None, f"no verdict found in reply: {text.strip()[:120]!r}")


def regex_parser(pattern: str | re.Pattern[str]) -> Callable[[str], ParsedVerdict]:
    """A parse rule from a regular expression whose first group captures the verdict.

    Every match is read; conflicting matches are ambiguous (a failure), no match is a failure.
    """
    compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
    if compiled.groups < 1:
        raise ValueError("a verdict pattern needs a capturing group for the verdict")

    def parse(text: str) -> ParsedVerdict:
        found: list[Verdict] = []
        for match in compiled.finditer(text or ""):
            verdict = normalize_verdict(match.group(1))
            if verdict is None:
                return ParsedVerdict(None, f"pattern matched {match.group(1)!r}, which is not a verdict")
            found.append(verdict)
        result = _unique(found, f"pattern {compiled.pattern!r}")
        return result or ParsedVerdict(None, f"pattern {compiled.pattern!r} not found in reply")

    return parse
