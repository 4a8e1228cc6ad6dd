"""Pairwise comparison as a shared service: outcomes, ratings, tournaments, LLM judges, feature rankers.

Used by ReM-MoA's Reviewer (:class:`PairwiseJudge` + :func:`run_tournament` + Bradley–Terry) and
CudaPerf's offline program ranker (:func:`make_pairs` + :class:`LogisticPairwiseRanker`). Every
piece speaks :class:`Outcome`, whose ``source`` keeps reviewer opinions apart from verifier facts.
See docs/rank.md. Submodules are imported on first use of a name so ``import veriforge.rank`` stays
cheap (numpy and the LLM client load only when a fit or a judge needs them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from veriforge.rank.errors import (
    InsufficientDataError,
    MixedProvenanceError,
    MixedSourcesError,
    RankError,
    ScheduleError,
)

if TYPE_CHECKING:
    from veriforge.rank.features import (
        LogisticPairwiseRanker,
        ProgramPair,
        RankNetRanker,
        TimedItem,
        make_pairs,
        pair_arrays,
        pairs_to_outcomes,
        split_pairs_by_task,
    )
    from veriforge.rank.judge import PairwiseJudge, combine_verdicts
    from veriforge.rank.outcomes import Judgement, Outcome, Source
    from veriforge.rank.ratings import (
        Agreement,
        Ratings,
        bradley_terry,
        elo,
        elo_expected,
        elo_update,
        fit_ratings,
        judgement_agreement,
        kendall_tau,
        outcome_agreement,
        pairwise_agreement,
        ranking,
        win_rate,
    )
    from veriforge.rank.tournament import (
        AllPairs,
        SwissRounds,
        TopKRefresh,
        TournamentResult,
        run_tournament,
    )
    from veriforge.rank.verdicts import ParsedVerdict, parse_verdict, regex_parser

_LAZY: dict[str, str] = {
    **dict.fromkeys(["Judgement", "Outcome", "Source"], "outcomes"),
    **dict.fromkeys(
        ["Agreement", "Ratings", "bradley_terry", "elo", "elo_expected", "elo_update", "fit_ratings",
         "judgement_agreement", "kendall_tau", "outcome_agreement", "pairwise_agreement", "ranking",
         "win_rate"],
        "ratings",
    ),
    **dict.fromkeys(["AllPairs", "SwissRounds", "TopKRefresh", "TournamentResult", "run_tournament"],
                    "tournament"),
    **dict.fromkeys(["PairwiseJudge", "combine_verdicts"], "judge"),
    **dict.fromkeys(["ParsedVerdict", "parse_verdict", "regex_parser"], "verdicts"),
    **dict.fromkeys(
        ["LogisticPairwiseRanker", "ProgramPair", "RankNetRanker", "TimedItem", "make_pairs", "pair_arrays",
         "pairs_to_outcomes", "split_pairs_by_task"],
        "features",
    ),
}

__all__ = [
    "Agreement",
    "AllPairs",
    "InsufficientDataError",
    "Judgement",
    "LogisticPairwiseRanker",
    "MixedProvenanceError",
    "MixedSourcesError",
    "Outcome",
    "PairwiseJudge",
    "ParsedVerdict",
    "ProgramPair",
    "RankError",
    "RankNetRanker",
    "Ratings",
    "ScheduleError",
    "Source",
    "SwissRounds",
    "TimedItem",
    "TopKRefresh",
    "TournamentResult",
    "bradley_terry",
    "combine_verdicts",
    "elo",
    "elo_expected",
    "elo_update",
    "fit_ratings",
    "judgement_agreement",
    "kendall_tau",
    "make_pairs",
    "outcome_agreement",
    "pair_arrays",
    "pairs_to_outcomes",
    "pairwise_agreement",
    "parse_verdict",
    "ranking",
    "regex_parser",
    "run_tournament",
    "split_pairs_by_task",
    "win_rate",
]


def __getattr__(name: str) -> Any:
    """Import the submodule that defines ``name`` on first access."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'veriforge.rank' has no attribute {name!r}")
    return getattr(importlib.import_module(f"veriforge.rank.{module}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
