"""The classic track: PPO on gymnasium tasks (classic.toml), one backend, a fixed episode evaluation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autorl.backend import Backend
from autorl.machine import Machine

# The score is a normalised area under the learning curve (0..1). Measured on CartPole with the shipped
# classic.toml: seed-to-seed sd 0.086 at a score of 0.59 (5 seeds); the prior is relative to the reference's.
RELATIVE_SEED_SD = 0.15
MIN_SEED_SD = 0.05


class ClassicTrack:
    name = "classic"
    default_config = "classic.toml"
    default_seeds = 5
    default_backend = "classic"

    def backend_name(self, requested: str, machine: Machine | None) -> str:
        return "classic"

    def load_config(self, path: Path, backend_name: str, prepared_model: str | None) -> Any:
        from autorl.classic.config import load_classic_config

        return load_classic_config(path)

    def make_backend(self, backend_name: str) -> Backend:
        from autorl.classic.backend import ClassicBackend

        return ClassicBackend()

    def prepare_reason(self, machine: Machine | None) -> str | None:
        return None  # nothing to build or download

    def prepare(self, config_path: Path) -> Machine:
        raise NotImplementedError("the classic track needs no preparation")

    def eval_hash(self, cfg: Any) -> str:
        from autorl.classic.evaluate import eval_hash

        return eval_hash(cfg)

    def base_model_id(self, cfg: Any) -> str:
        return "random-policy"

    def prior_seed_sd(self, reference_score: float | None) -> float:
        """15% of the reference score, at least 0.05."""
        return max(RELATIVE_SEED_SD * abs(reference_score or 0.0), MIN_SEED_SD)

    def score_range(self, cfg: Any) -> tuple[float, float]:
        from autorl.classic.evaluate import SCORE_RANGE

        return SCORE_RANGE


TRACK = ClassicTrack()
