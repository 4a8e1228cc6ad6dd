"""Export D3-Gym trajectories for training: SFT chat JSONL, preference pairs, per-step RL records.

``sft`` -- one line per verified episode, ``{"messages": [{"role": ..., "content": ...}, ...]}``, the
conversational format TRL's ``SFTTrainer`` reads directly (``load_dataset("json", data_files=...)``).
Turn shapes (``turns``):

* ``all``: system, the task observation, then every assistant attempt with the environment's
  feedback in between, ending at the accepted program (teaches self-debugging -- and, unmasked, also
  imitates the failed attempts);
* ``final``: system, the task observation and only the accepted assistant reply (teaches getting it
  right first time; the usual rejection-sampling SFT set);
* ``mask-failed``: as ``all``, but every assistant message carries ``"weight"``: ``1`` for the
  accepted reply, ``0`` for a failed one (no code block, program crashed/timed out, or outputs
  rejected) -- the failures stay as context, only the fix is trained (the per-message ``weight``
  convention of OpenAI's chat fine-tuning format);
* ``drop-failed``: turns whose program did not even run (no code block, exception, timeout, missing
  outputs) are removed together with their feedback; attempts that ran but were rejected stay as
  context with ``weight`` 0, the accepted reply has ``weight`` 1.

``preference`` -- TRL's DPO conversational format, one line per pair: ``{"prompt": [system, task
observation], "chosen": [assistant], "rejected": [assistant]}`` plus ``task_id``/``source``. Chosen
replies are accepted programs; rejected ones are the final replies of failed episodes of the same
task (``source: "episodes"``) and a verified episode's own first failed attempt (``source:
"self-debug"``: same prompt, the first try failed, the accepted reply fixed it).

``rl`` -- one line per episode with the reward of every step: the prompt, then per assistant turn
the action, the environment's observation, ``executed`` (the program ran and produced its outputs),
``accepted`` (the evaluator passed them) and ``reward`` (the environment's step reward, 1 only when
accepted), plus the episode return. Infrastructure failures are left out: they say nothing about
the agent.

SFT exports only verified episodes by default (rejection sampling); exact duplicate lines are
written once in every format, because deterministic sampling easily repeats an episode and
duplicated lines silently up-weight it in training.
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
    "export_preference",
    "export_rl",
    "export_sft",
    "load_trajectories",
    "to_messages",
]

EXPORT_FORMATS = ("sft", "preference", "rl")
TURNS = ("all", "final", "mask-failed", "drop-failed")


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
    masked_turns: int = 0  # sft mask-failed/drop-failed: assistant turns with weight 0
    dropped_turns: int = 0  # sft drop-failed: assistant turns removed with their feedback
    infrastructure_skipped: int = 0  # preference/rl: episodes that failed for infrastructure reasons
    pairs_by_source: dict[str, int] = field(default_factory=dict)  # preference
    steps: int = 0  # rl: assistant steps written

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


def _turn_outcome(steps: list[Any], i: int) -> tuple[bool, bool]:
    """``(executed, accepted)`` of the assistant turn at ``i``, from the feedback step after it."""
    fb = steps[i + 1] if i + 1 < len(steps) else None
    if fb is None or fb.kind != "feedback":
        return False, False
    info = fb.metadata.get("info") or {}
    accepted = fb.reward == 1.0
    executed = accepted or bool(info.get("valid_execution"))
    return executed, accepted


def to_messages(
    traj: Trajectory, *, turns: str = "all", system_prompt: str | None = None
) -> list[dict[str, Any]]:
    """The episode as chat messages ending with the accepted assistant reply.

    ``system_prompt`` replaces the recorded one (e.g. to train with a shorter prompt). An episode
    without an accepted reply gives ``[]``. With ``mask-failed``/``drop-failed`` every assistant
    message has a ``weight`` (1 accepted, 0 failed); see the module docstring.
    """
    if turns not in TURNS:
        raise ExportError(f"turns must be one of {', '.join(TURNS)}, got {turns!r}")
    steps = list(traj.steps)
    end = _final_index(steps)
    if end is None:
        return []
    msgs: list[dict[str, Any]] = []
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
    weighted = turns in ("mask-failed", "drop-failed")
    skip_next_feedback = False
    for i in range(first_user, end + 1):
        s = steps[i]
        if s.role == "user" and s.kind == "feedback" and skip_next_feedback:
            skip_next_feedback = False
            continue  # the feedback of a dropped turn goes with it
        if s.role == "user":
            msgs.append({"role": "user", "content": s.content})
        elif s.role == "assistant":
            executed, accepted = _turn_outcome(steps, i)
            if turns == "drop-failed" and not executed:
                skip_next_feedback = True
                continue
            msg: dict[str, Any] = {"role": "assistant", "content": s.content}
            if weighted:
                msg["weight"] = 1 if accepted else 0
            msgs.append(msg)
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
            stats.masked_turns += sum(1 for m in msgs if m.get("weight") == 0)
            if turns == "drop-failed":
                full = to_messages(t, turns="all", system_prompt=system_prompt)
                stats.dropped_turns += sum(1 for m in full if m["role"] == "assistant") - sum(
                    1 for m in msgs if m["role"] == "assistant"
                )
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


def _prompt(traj: Trajectory, system_prompt: str | None) -> list[dict[str, str]] | None:
    """The episode's opening messages (system prompt and task observation), or None."""
    steps = list(traj.steps)
    system = next((s for s in steps if s.role == "system"), None)
    first = next((s for s in steps if s.role == "user" and s.kind != "feedback"), None)
    if first is None:
        return None
    out: list[dict[str, str]] = []
    if system_prompt is not None or system is not None:
        out.append({"role": "system", "content": system_prompt if system_prompt is not None else system.content})
    out.append({"role": "user", "content": first.content})
    return out


def _is_infra(traj: Trajectory) -> bool:
    return bool(traj.metadata.get("infrastructure_failure"))


def _write_lines(out_path: Path, lines: list[dict[str, Any]]) -> None:
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_suffix(out_path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    tmp.replace(out_path)


def _finish(stats: ExportStats, out_path: Path) -> ExportStats:
    out_path.with_name(out_path.name + ".stats.json").write_text(json.dumps(stats.to_dict(), indent=2) + "\n")
    return stats


def export_preference(
    trajectories: Iterable[Trajectory], out: str | Path, *, system_prompt: str | None = None
) -> ExportStats:
    """Write DPO preference pairs (TRL conversational ``prompt``/``chosen``/``rejected``) to ``out``.

    Per task, every accepted reply is paired with failed replies of the same task, cycling over the
    shorter list so each chosen and each rejected reply appears at least once (``episodes``), and a
    verified episode that needed debugging also gives (accepted reply, its own first failed reply)
    (``self-debug``). Episodes that failed for infrastructure reasons never become rejected
    examples: the program was not at fault.
    """
    from veriforge.discovery.trajectories import rejection_sample

    trajs = list(trajectories)
    out_path = Path(out).expanduser()
    stats = ExportStats(out=str(out_path), format="preference", turns="final", read=len(trajs))
    verified_ids = {id(t) for t in rejection_sample(trajs)}
    chosen: dict[str, list[tuple[list[dict[str, str]], str]]] = {}
    rejected: dict[str, list[str]] = {}
    lines: list[dict[str, Any]] = []
    seen: set[str] = set()
    per_task: Counter[str] = Counter()
    by_source: Counter[str] = Counter()

    def add(task: str, prompt: list[dict[str, str]], good: str, bad: str, source: str) -> None:
        if good == bad:
            return
        line = {
            "prompt": prompt,
            "chosen": [{"role": "assistant", "content": good}],
            "rejected": [{"role": "assistant", "content": bad}],
            "task_id": task,
            "source": source,
        }
        key = content_hash(canonical_json(line))
        if key in seen:
            stats.duplicates_skipped += 1
            return
        seen.add(key)
        lines.append(line)
        per_task[task] += 1
        by_source[source] += 1

    for t in trajs:
        if _is_infra(t):
            stats.infrastructure_skipped += 1
            continue
        prompt = _prompt(t, system_prompt)
        steps = list(t.steps)
        if prompt is None:
            stats.unusable_skipped += 1
            continue
        replies = [i for i, s in enumerate(steps) if s.role == "assistant"]
        if id(t) in verified_ids:
            end = _final_index(steps)
            if end is None:
                stats.unusable_skipped += 1
                continue
            chosen.setdefault(t.task_id, []).append((prompt, steps[end].content))
            if replies and replies[0] != end:
                add(t.task_id, prompt, steps[end].content, steps[replies[0]].content, "self-debug")
        elif replies:
            rejected.setdefault(t.task_id, []).append(steps[replies[-1]].content)
        else:
            stats.unusable_skipped += 1
    for task in sorted(chosen):
        goods, bads = chosen[task], rejected.get(task, [])
        for k in range(max(len(goods), len(bads)) if bads else 0):
            prompt, good = goods[k % len(goods)]
            add(task, prompt, good, bads[k % len(bads)], "episodes")
    _write_lines(out_path, lines)
    stats.exported = len(lines)
    stats.tasks = len(per_task)
    stats.per_task = dict(sorted(per_task.items()))
    stats.pairs_by_source = dict(sorted(by_source.items()))
    stats.unverified_skipped = sum(1 for t in trajs if id(t) not in verified_ids and not _is_infra(t))
    return _finish(stats, out_path)


def export_rl(
    trajectories: Iterable[Trajectory], out: str | Path, *, system_prompt: str | None = None
) -> ExportStats:
    """Write one per-step reward record per episode (verified or not) to ``out``.

    ``{"task_id", "trajectory_id", "prompt": [...], "steps": [{"index", "action", "program",
    "observation", "executed", "accepted", "reward", "done"}], "return", "success"}``: ``reward`` is
    the environment's step reward (1.0 when the evaluator accepted the outputs, else 0.0); a
    trainer that wants shaping can use ``executed`` as the intermediate signal.
    """
    trajs = list(trajectories)
    out_path = Path(out).expanduser()
    stats = ExportStats(out=str(out_path), format="rl", turns="all", read=len(trajs))
    lines: list[dict[str, Any]] = []
    seen: set[str] = set()
    per_task: Counter[str] = Counter()
    for t in trajs:
        if _is_infra(t):
            stats.infrastructure_skipped += 1
            continue
        prompt = _prompt(t, system_prompt)
        steps = list(t.steps)
        actions = [i for i, s in enumerate(steps) if s.role == "assistant"]
        if prompt is None or not actions:
            stats.unusable_skipped += 1
            continue
        records = []
        for n, i in enumerate(actions):
            executed, accepted = _turn_outcome(steps, i)
            fb = steps[i + 1] if i + 1 < len(steps) and steps[i + 1].kind == "feedback" else None
            records.append(
                {
                    "index": n,
                    "action": steps[i].content,
                    "program": steps[i].metadata.get("program"),
                    "observation": fb.content if fb is not None else "",
                    "executed": executed,
                    "accepted": accepted,
                    "reward": float(fb.reward) if fb is not None and fb.reward is not None else 0.0,
                    "done": n == len(actions) - 1,
                }
            )
        line = {
            "task_id": t.task_id,
            "trajectory_id": t.id,
            "prompt": prompt,
            "steps": records,
            "return": float(t.reward or 0.0),
            "success": bool(t.metadata.get("success")),
        }
        key = content_hash(canonical_json({k: v for k, v in line.items() if k != "trajectory_id"}))
        if key in seen:
            stats.duplicates_skipped += 1
            continue
        seen.add(key)
        lines.append(line)
        per_task[t.task_id] += 1
        stats.steps += len(records)
    _write_lines(out_path, lines)
    stats.exported = len(lines)
    stats.tasks = len(per_task)
    stats.per_task = dict(sorted(per_task.items()))
    return _finish(stats, out_path)


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
    """What ``veriforge d3gym export TRAJ/ --format sft|preference|rl --out FILE`` calls."""
    if fmt not in EXPORT_FORMATS:
        raise ExportError(f"unknown export format {fmt!r} (available: {', '.join(EXPORT_FORMATS)})")
    if turns not in TURNS:
        raise ExportError(f"turns must be one of {', '.join(TURNS)}, got {turns!r}")
    if fmt != "sft" and turns != "all":
        raise ExportError(f"--turns applies to the sft format only (got --format {fmt} --turns {turns})")
    trajs = load_trajectories(traj_dir)
    if fmt == "preference":
        return export_preference(trajs, out, system_prompt=system_prompt)
    if fmt == "rl":
        return export_rl(trajs, out, system_prompt=system_prompt)
    return export_sft(
        trajs,
        out,
        turns=turns,
        only_verified=only_verified,
        dedupe=dedupe,
        system_prompt=system_prompt,
    )


def export_cli(
    *, traj: str | Path, fmt: str = "sft", out: str | Path | None = None, turns: str = "all"
) -> int:
    """``veriforge d3gym export TRAJ/ --format sft|preference|rl [--turns ...] --out FILE``; ``out``
    defaults to ``TRAJ/<format>.jsonl``.

    Exit code 1 when nothing was exported (no verified trajectory, no pair), so a pipeline notices.
    """
    import sys

    traj_path = Path(traj).expanduser()
    base = traj_path if traj_path.is_dir() else traj_path.parent
    out_path = Path(out) if out is not None else base / f"{fmt}.jsonl"
    stats = export_dir(traj_path, out=out_path, fmt=fmt, turns=turns)
    if fmt == "sft":
        print(
            f"exported {stats.exported} conversation(s) from {stats.read} trajectory(ies) "
            f"of {stats.tasks} task(s) to {stats.out} (turns {turns}; skipped: {stats.unverified_skipped} "
            f"unverified, {stats.duplicates_skipped} duplicate, {stats.unusable_skipped} unusable); "
            f"assistant turns per conversation {stats.assistant_turns_hist}"
            + (f"; {stats.masked_turns} turn(s) weight 0" if turns in ("mask-failed", "drop-failed") else "")
            + (f", {stats.dropped_turns} dropped" if turns == "drop-failed" else "")
        )
    elif fmt == "preference":
        print(
            f"exported {stats.exported} preference pair(s) {stats.pairs_by_source} from {stats.read} "
            f"trajectory(ies) of {stats.tasks} task(s) to {stats.out} (skipped: "
            f"{stats.infrastructure_skipped} infrastructure, {stats.duplicates_skipped} duplicate)"
        )
    else:
        print(
            f"exported {stats.exported} episode(s) with {stats.steps} rewarded step(s) from {stats.read} "
            f"trajectory(ies) of {stats.tasks} task(s) to {stats.out} (skipped: "
            f"{stats.infrastructure_skipped} infrastructure, {stats.duplicates_skipped} duplicate)"
        )
    if not stats.exported:
        what = {"sft": "verified trajectory", "preference": "chosen/rejected pair", "rl": "usable trajectory"}
        print(f"error: no {what[fmt]} to export", file=sys.stderr)
        return 1
    return 0
