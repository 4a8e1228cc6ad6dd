"""Inputs for cumulative_max_int's ``drifting_walk`` configuration.

With independent uniform values the running maximum saturates after a few hundred elements, so a
kernel that drops the carry between blocks is only wrong near the start. A random walk with a small
upward drift keeps setting new records across the whole array, and rare large spikes create long
plateaus that the walk must climb back to; together they make every block's carry-in matter.
"""

from __future__ import annotations

import numpy as np


def make_inputs(config: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = int(config["n"])
    steps = rng.integers(-1000, 1101, size=n, dtype=np.int64)          # mean drift +50 per element
    walk = np.cumsum(steps) + int(rng.integers(-1_000_000, 1_000_000))
    spikes = rng.random(n) < 2e-4
    walk[spikes] += rng.integers(100_000, 1_000_000, size=int(spikes.sum()))
    return {"x": walk.astype(np.int32)}
