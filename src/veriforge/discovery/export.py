"""Export verified D3-Gym trajectories as chat JSONL for supervised fine-tuning.

One line per episode, ``{"messages": [{"role": ..., "content": ...}, ...]}`` -- the conversational
format TRL's ``SFTTrainer`` reads directly (``load_dataset("json", data_files=...)``). Two shapes:

* ``turns="all"``: system, the task observation, then every assistant attempt with the environment's
  feedback in between, ending at the accepted program (teaches self-debugging);
* ``turns="final"``: system, the task observation and only the accepted assistant reply (teaches
  getting it right first time; the usual rejection-sampling SFT set).

Only verified episodes are exported by default (rejection sampling); exact duplicate conversations
are written once, because deterministic sampling easily repeats an episode and duplicated lines
silently up-weight it in training.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from veriforge.core.hashing import canonical_json, content_hash
from veriforge.core.types import Trajectory
from veriforge.discovery.errors import DiscoveryError

__all__ = [
    "EXPORT_FORMATS",
    "TURNS",
    "ExportError",
    "ExportStats",
    "export_cli",
    "export_dir",
    "export_sft",
    "load_trajectories",
    "to_messages",
]

EXPORT_FORMATS = ("sft",)
TURNS = ("all", "final")


class ExportError(DiscoveryError):
    """Nothing to export from, or an unknown format/option."""


@dataclass
class ExportStats:
    """What an export read and wrote (also written next to the JSONL as ``<file>.stats.json``)."""

    out: str
    format: str
    turns: str
    read: int = 0
    exported: int = 0
    unverified_skipped: int = 0
    duplicates_skipped: int = 0
    unusable_skipped: int = 0
    tasks: int = 0
    messages: int = 0
    assistant_turns_hist: dict[str, int] = field(default_factory=dict)
    mean_chars: float | None = None
    per_task: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_trajectories(src: str | Path) -> list[Trajectory]:
    """Trajectories from a run folder (``trajectories.jsonl``, else the run store), or a JSONL file."""
    from veriforge.discovery.trajectories import RECORD_NS, STORE_FILE, TRAJECTORIES_FILE

    p = Path(src).expanduser()
    if p.is_dir():
        if (p / TRAJECTORIES_FILE).is_file():
            p = p / TRAJECTORIES_FILE
        elif (p / STORE_FILE).is_file():
            from veriforge.core.store import RunStore

            store = RunStore(p / STORE_FILE)
            try:
                return [Trajectory.model_validate(r.value) for r in store.records(RECORD_NS)]
            finally:
                store.close()
        else:
            raise ExportError(
                f"{p}: no {TRAJECTORIES_FILE} or {STORE_FILE} (is it a `d3gym run` output folder?)"
            )
    if not p.is_file():
        raise ExportError(f"{p}: no such file or folder")
    out: list[Trajectory] = []
    for number, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(Trajectory.from_json(line))
        except ValueError as exc:
            raise ExportError(f"{p}:{number}: not a trajectory ({str(exc).splitlines()[0]})") from exc
    return out


def _final_index(steps: list[Any]) -> int | None:
    """Index of the assistant step whose program earned reward 1 (the feedback right after it)."""
    for i in range(len(steps) - 1, 0, -1):
        s = steps[i]
        if s.kind == "feedback" and s.reward == 1.0 and steps[i - 1].role == "assistant":
            return i - 1
    return None


def to_messages(
    traj: Trajectory, *, turns: str = "all", system_prompt: str | None = None
) -> list[dict[str, str]]:
    """The episode as chat messages ending with the accepted assistant reply.

    ``system_prompt`` replaces the recorded one (e.g. to train with a shorter prompt). An episode
    without an accepted reply gives ``[]``.
    """
    if turns not in TURNS:
        raise ExportError(f"turns must be one of {', '.join(TURNS)}, got {turns!r}")
    steps = list(traj.steps)
    end = _final_index(steps)
    if end is None:
        return []
    msgs: list[dict[str, str]] = []
    system = next((s for s in steps if s.role == "system"), None)
    if system_prompt is not None or system is not None:
        msgs.append(
            {"role": "system", "content": system_prompt if system_prompt is not None else system.content}
        )
    first_user = next((i for i, s in enumerate(steps) if s.role == "user" and s.kind != "feedback"), None)
    if first_user is None or first_user > end:
        return []
    if turns == "final":
        return [
            *msgs,
            {"role": "user", "content": steps[first_user].content},
            {"role": "assistant", "content": steps[end].content},
        ]
    for s in steps[first_user : end + 1]:
        if s.role in ("user", "assistant"):
            msgs.append({"role": s.role, "content": s.content})
    return msgs


def export_sft(
    trajectories: Iterable[Trajectory],
    out: str | Path,
    *,
    turns: str = "all",
    only_verified: bool = True,
    dedupe: bool = True,
    system_prompt: str | None = None,
) -> ExportStats:
    """Write the SFT JSONL to ``out`` (atomically) and ``<out>.stats.json``; return the stats.

    With ``only_verified=False`` unverified episodes are exported up to their last assistant turn
    (useful for inspection, never for training on its own).
    """
    from veriforge.discovery.trajectories import rejection_sample

    if turns not in TURNS:
        raise ExportError(f"turns must be one of {', '.join(TURNS)}, got {turns!r}")
    trajs = list(trajectories)
    keep = rejection_sample(trajs) if only_verified else trajs
    kept_ids = {id(t) for t in keep}
    out_path = Path(out).expanduser()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    stats = ExportStats(
        out=str(out_path),
        format="sft",
        turns=turns,
        read=len(trajs),
        unverified_skipped=len(trajs) - len(keep),
    )
    seen: set[str] = set()
    hist: Counter[str] = Counter()
    per_task: Counter[str] = Counter()
    chars = 0
    tmp = out_path.with_suffix(out_path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for t in trajs:
            if id(t) not in kept_ids:
                continue
            msgs = to_messages(t, turns=turns, system_prompt=system_prompt)
            if not msgs and not only_verified:
                msgs = _unverified_messages(t, system_prompt)
            if not msgs or msgs[-1]["role"] != "assistant":
                stats.unusable_skipped += 1
                continue
            key = content_hash(canonical_json(msgs))
            if dedupe and key in seen:
                stats.duplicates_skipped += 1
                continue
            seen.add(key)
            fh.write(json.dumps({"messages": msgs}, ensure_ascii=False) + "\n")
            stats.exported += 1
            stats.messages += len(msgs)
            hist[str(sum(1 for m in msgs if m["role"] == "assistant"))] += 1
            per_task[t.task_id] += 1
            chars += sum(len(m["content"]) for m in msgs)
    tmp.replace(out_path)
    stats.tasks = len(per_task)
    stats.assistant_turns_hist = dict(sorted(hist.items(), key=lambda kv: int(kv[0])))
    stats.per_task = dict(sorted(per_task.items()))
    stats.mean_chars = round(chars / stats.exported, 1) if stats.exported else None
    out_path.with_name(out_path.name + ".stats.json").write_text(json.dumps(stats.to_dict(), indent=2) + "\n")
    return stats


def _unverified_messages(traj: Trajectory, system_prompt: str | None) -> list[dict[str, str]]:
    msgs = [
        {
            "role": s.role if s.role != "system" or system_prompt is None else "system",
            "content": system_prompt if s.role == "system" and system_prompt is not None else s.content,
        }
        for s in traj.steps
        if s.role in ("system", "user", "assistant")
    ]
    while msgs and msgs[-1]["role"] != "assistant":
        msgs.pop()
    return msgs


def export_dir(
    traj_dir: str | Path,
    *,
    out: str | Path,
    fmt: str = "sft",
    turns: str = "all",
    only_verified: bool = True,
    dedupe: bool = True,
    system_prompt: str | None = None,
) -> ExportStats:
    """What ``veriforge d3gym export TRAJ/ --format sft --out FILE`` calls."""
    if fmt not in EXPORT_FORMATS:
        raise ExportError(f"unknown export format {fmt!r} (available: {', '.join(EXPORT_FORMATS)})")
    return export_sft(
        load_trajectories(traj_dir),
        out,
        turns=turns,
        only_verified=only_verified,
        dedupe=dedupe,
        system_prompt=system_prompt,
    )


def export_cli(
    *, traj: str | Path, fmt: str = "sft", out: str | Path | None = None, turns: str = "all"
) -> int:
    """``veriforge d3gym export TRAJ/ --format sft --out FILE``; ``out`` defaults to ``TRAJ/sft.jsonl``.

    Exit code 1 when nothing was exported (no verified trajectory), so a pipeline notices.
    """
    import sys

    traj_path = Path(traj).expanduser()
    base = traj_path if traj_path.is_dir() else traj_path.parent
    out_path = Path(out) if out is not None else base / f"{fmt}.jsonl"
    stats = export_dir(traj_path, out=out_path, fmt=fmt, turns=turns)
    print(
        f"exported {stats.exported} conversation(s) from {stats.read} trajectory(ies) "
        f"of {stats.tasks} task(s) to {stats.out} (skipped: {stats.unverified_skipped} unverified, "
        f"{stats.duplicates_skipped} duplicate, {stats.unusable_skipped} unusable); "
        f"assistant turns per conversation {stats.assistant_turns_hist}"
    )
    if not stats.exported:
        print("error: no verified trajectory to export", file=sys.stderr)
        return 1
    return 0
