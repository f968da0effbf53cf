"""`autorl fidelity`: does a decision taken at the trial's budget hold at a longer one?

It takes the trials of one research context (the latest trial's by default), chooses configs (the
baseline, every kept trial, then discarded trials spread over the range of their short scores, `--configs`
in all), re-trains each one's runs/<id>/config.toml at a longer budget (`--factor` times the context's, or
`--budget`) on `--seeds` fresh seeds (the same seeds for every config), and compares the two rankings:
Spearman's rho and Kendall's tau (scipy) with a bootstrap interval (configs and seeds resampled), where the
short winner ranks at the long budget and what choosing it costs (regret), and for every kept config its
long-budget delta against the baseline, judged by the statistics a trial uses (`holds` = improved).

Recorded, never lost: runs/<fidelity_id>/plan.json (what runs), runs/<fidelity_id>/<run_id>/seed-<k>/ (every
seed's files), runs/<fidelity_id>/fidelity.json (the summary) and one row per config in fidelity.tsv next to
results.tsv. A stopped run keeps its finished seeds; `--resume FIDELITY_ID` runs only the missing ones.
"""

from __future__ import annotations

import hashlib
import json
import sys
import warnings
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as sps

from autorl.engine import warm
from autorl.engine.backend import TrialConfig
from autorl.engine.retrain import (
    RetrainError,
    recorded_config,
    retrain_plan,
    run_jobs,
    same_harness,
)
from autorl.engine.seed import SeedResult, finished_rows
from autorl.io import atomic, inputs, paths
from autorl.record import events, stats
from autorl.record.context import ResearchContext, baseline, is_quick
from autorl.record.ledger import Ledger
from autorl.record.outcome import SeedOutcome
from autorl.record.ranking import rank_stats, rho_interval
from autorl.record.row import LedgerRow
from autorl.record.sidetables import FIDELITY

FIDELITY_SEED_BASE = 3_000_000  # trials draw seeds below 1,000,064, confirm from 2,000,000: these no one else


def say(msg: str) -> None:
    print(f"[fidelity] {msg}", flush=True)


# ---- which configs ----------------------------------------------------------------------------------------


def choose(rows: list[LedgerRow], n: int) -> list[tuple[str, LedgerRow]]:
    """(role, row) of the configs to re-train: the context's baseline (record.context.baseline: a contended
    baseline discarded and run again is the run again), every other kept trial, then discarded ones at
    evenly spaced ranks of their short scores until `n` in all; one trial per config (a repeat of a config
    already chosen adds nothing)."""
    ok = [r for r in rows if r.scored]
    if (base := baseline(ok)) is None:
        raise RetrainError("no ok trial in this research context: nothing to re-train")
    chosen = [("baseline", base)]
    chosen += [("kept", r) for r in ok if r.decision == "keep" and r.config_hash != base.config_hash]
    seen = {r.config_hash for _, r in chosen}
    rest = sorted(
        (r for r in ok if r.config_hash not in seen and r.decision != "keep"),
        key=lambda r: r.eval_score or 0.0,
    )
    unique = list({r.config_hash: r for r in rest}.values())  # the latest trial of each config
    unique.sort(key=lambda r: r.eval_score or 0.0)
    room = max(0, n - len(chosen))
    if room and unique:
        picks = sorted(
            {round(i * (len(unique) - 1) / max(1, room - 1)) for i in range(min(room, len(unique)))}
        )
        chosen += [("discarded", unique[i]) for i in picks]
    return chosen


# ---- the plan, run and resumed --------------------------------------------------------------------------


@dataclass
class Plan:
    """What a fidelity run trains: written to runs/<fidelity_id>/plan.json before any seed starts."""

    fidelity_id: str
    context: ResearchContext
    long_budget: float
    seeds: list[int]
    configs: list[tuple[str, str]]  # (role, run_id)

    def save(self) -> None:
        data = {
            "fidelity_id": self.fidelity_id,
            "context": {
                "track": self.context.track,
                "eval_hash": self.context.eval_hash,
                "harness_hash": self.context.harness_hash,
                "budget": self.context.budget,
            },
            "long_budget": self.long_budget,
            "seeds": self.seeds,
            "configs": [list(c) for c in self.configs],
        }
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic.write_text(self.dir / "plan.json", json.dumps(data, indent=2) + "\n")

    @classmethod
    def load(cls, fidelity_id: str) -> Plan:
        path = paths.runs_dir() / fidelity_id / "plan.json"
        data = inputs.read_json_object(path)
        if not data:
            raise RetrainError(
                f"{path}: no fidelity run {fidelity_id!r} to resume (its plan.json is missing)"
            )
        return cls(
            data["fidelity_id"],
            ResearchContext(**data["context"]),
            float(data["long_budget"]),
            [int(s) for s in data["seeds"]],
            [(role, run_id) for role, run_id in data["configs"]],
        )

    @property
    def dir(self) -> Path:
        return paths.runs_dir() / self.fidelity_id

    @property
    def factor(self) -> float:
        """How many times the trial's budget the long runs train (the classic track: its score's horizon)."""
        return self.long_budget / (self.context.budget or self.long_budget)

    def seed_dir(self, run_id: str, k: int) -> Path:
        return self.dir / run_id / f"seed-{k}"


def fidelity_seeds(fidelity_id: str, n: int) -> list[int]:
    base = int(hashlib.sha256(fidelity_id.encode()).hexdigest()[:8], 16) % 1_000_000
    return [FIDELITY_SEED_BASE + base + k for k in range(n)]


HOLDS = {"improved": "holds", "worse": "does not hold", "inconclusive": "inconclusive"}
FEW_CONFIGS = 4  # below this many configs ranked, the summary says rho takes only a few values


# ---- the command ------------------------------------------------------------------------------------------


@dataclass
class Config:
    """One re-trained config: its trial, its role, its long-budget seeds' eval rows."""

    role: str
    row: LedgerRow
    cfg: TrialConfig
    long_rows: list[list[dict[str, Any]]]  # per seed that finished
    long_dirs: list[Path]  # those seeds' directories, in the same order

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [r for seed in self.long_rows for r in seed]


def new_plan(
    rows: list[LedgerRow],
    track: str | None,
    factor: float,
    budget: float | None,
    n_seeds: int,
    n_configs: int,
) -> Plan:
    """A new fidelity run of the latest context (of `track`); RetrainError when it cannot start."""
    latest = next((r for r in reversed(rows) if not is_quick(r) and track in (None, r.track)), None)
    if latest is None:
        raise RetrainError(f"no trials{f' on the {track} track' if track else ''} yet: nothing to re-train")
    context = ResearchContext.of(latest)
    if context.budget is None:
        raise RetrainError(f"the latest context recorded no budget ({latest.run_id}): re-run its trials")
    long_budget = budget if budget is not None else context.budget * factor
    if long_budget <= context.budget:
        raise RetrainError(
            f"--budget {long_budget:g}: the long budget must exceed the context's {context.budget:g} s"
        )
    chosen = choose(context.rows(rows), n_configs)
    if len(chosen) < 2:
        raise RetrainError("the context has one config: ranking needs at least two (run some trials first)")
    fid = f"fidelity-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{context.track}"
    return Plan(
        fid, context, long_budget, fidelity_seeds(fid, n_seeds), [(role, r.run_id) for role, r in chosen]
    )


def run_fidelity(
    track: str | None = None,
    factor: float = 4.0,
    budget: float | None = None,
    seeds: int = 3,
    configs: int = 8,
    resume: str | None = None,
    png: Path | None = None,
    ledger: Ledger | None = None,
    ray: str | None = None,
    dry_run: bool = False,
) -> int:
    if problem := warm.keep_problem():
        raise RetrainError(problem)
    if png is not None:
        atomic.check_target(png)
    ledger = ledger or Ledger()
    rows = ledger.rows()
    plan = Plan.load(resume) if resume else new_plan(rows, track, factor, budget, seeds, configs)
    if any(r["fidelity_id"] == plan.fidelity_id for r in FIDELITY.read(FIDELITY.beside(ledger))):
        raise RetrainError(f"{plan.fidelity_id} is already recorded in fidelity.tsv: nothing to resume")
    chosen, backend, the_track = _configs(plan, rows)  # every config checked before anything is written
    if dry_run:
        _announce(plan, chosen, len(jobs := _pending(plan, chosen)))
        _slots(rows, plan, chosen, jobs, backend, ray)
        say("dry run: nothing trained or recorded")
        return 0
    plan.save()
    jobs = _pending(plan, chosen)
    _announce(plan, chosen, len(jobs))
    if jobs and not _train(rows, plan, chosen, jobs, backend, ray):
        say(
            "stopped: the seeds that finished are kept; "
            f"`uv run autorl fidelity --resume {plan.fidelity_id}` runs the rest"
        )
        return 130
    return _conclude(ledger, plan, chosen, the_track, png)


def _configs(plan: Plan, rows: list[LedgerRow]) -> tuple[list[Config], Any, Any]:
    """The plan's configs loaded as their trials ran and lengthened by the plan's factor (RetrainError when
    one cannot be), the backend they ran on and their track."""
    from autorl.engine.track import get_track

    by_id = {r.run_id: r for r in rows}
    if missing := [run_id for _, run_id in plan.configs if run_id not in by_id]:
        raise RetrainError(f"results.tsv has no row for {', '.join(missing)}: this fidelity run cannot go on")
    the_track = get_track(plan.context.track)
    roles = [(role, by_id[run_id]) for role, run_id in plan.configs]
    same_harness(roles[0][1], "re-trained")
    backends = {row.backend for _, row in roles}
    if len(backends) > 1:
        raise RetrainError(f"the context's configs ran on several backends ({', '.join(sorted(backends))})")
    along_s = [fraction * plan.long_budget for fraction in budget_fractions(plan.factor)[:-1]]
    chosen = []
    for role, row in roles:
        loaded = recorded_config(row, the_track, f"{role} trial")
        chosen.append(Config(role, row, the_track.lengthen(loaded, plan.factor, along_s), [], []))
    return chosen, the_track.make_backend(backends.pop()), the_track


def _pending(plan: Plan, chosen: list[Config]) -> list[Any]:
    """The seeds still to run (autorl.engine.pool.SeedJob), interleaved (seed k of every config before seed
    k+1 of any: the machine's drift in speed falls on every config alike); the finished ones' rows go to
    their config."""
    from autorl.engine.pool import SeedJob

    jobs: list[SeedJob] = []
    for k, seed in enumerate(plan.seeds):
        for c in chosen:
            seed_dir = plan.seed_dir(c.row.run_id, k)
            if (done := finished_rows(seed_dir, seed)) is not None:
                c.long_rows.append(done)
                c.long_dirs.append(seed_dir)
            else:
                jobs.append(SeedJob(len(jobs), seed, seed_dir, c.cfg, "eval"))
    return jobs


def _train(
    rows: list[LedgerRow],
    plan: Plan,
    chosen: list[Config],
    jobs: list[Any],
    backend: Any,
    ray: str | None,
) -> bool:
    """Run the jobs on the machine's slots (or Ray's); False when a signal stopped them."""
    the_plan = _slots(rows, plan, chosen, jobs, backend, ray)
    results = run_jobs(backend, jobs, plan.long_budget, the_plan, _report, ray)
    if results is None:
        return False
    owner = {c.row.run_id: c for c in chosen}
    for r in results:
        if r.evaluated:
            owner[r.dir.parent.name].long_rows.append(r.eval_rows)
            owner[r.dir.parent.name].long_dirs.append(r.dir)
    return True


def _slots(
    rows: list[LedgerRow], plan: Plan, chosen: list[Config], jobs: list[Any], backend: Any, ray: str | None
) -> Any:
    """The jobs' slot plan, said with the wall time it is expected to take."""
    the_plan = retrain_plan(backend, chosen[0].cfg, plan.long_budget, len(jobs), ray)
    say(the_plan.describe())
    say(
        _estimate(rows, plan, len(jobs), the_plan.parallel)
        or "expected: not known yet (no trial measured here)"
    )
    return the_plan


def _announce(plan: Plan, chosen: list[Config], n_jobs: int) -> None:
    roles = ", ".join(f"{c.row.run_id} ({c.role}, {c.row.eval_score or 0.0:.4f})" for c in chosen)
    say(
        f"{plan.fidelity_id}: {len(chosen)} configs of the {plan.context.track} context at "
        f"{plan.context.budget:g} s re-trained at {plan.long_budget:g} s on seeds {plan.seeds}: {roles}"
    )
    if n_jobs < len(chosen) * len(plan.seeds):
        say(f"{len(chosen) * len(plan.seeds) - n_jobs} seeds finished before: {n_jobs} to run")


def _estimate(rows: list[LedgerRow], plan: Plan, n_jobs: int, parallel: int) -> str | None:
    """The wall time from the context's measured seconds per seed, its training at the long budget."""
    from autorl.engine.cost import expected_wall, minutes

    if (
        expected := expected_wall(rows, plan.context, n_jobs, parallel, (plan.factor, plan.long_budget))
    ) is None:
        return None
    wall, trials, seed = expected
    return (
        f"expected: ~{minutes(wall)} ({n_jobs} seeds, {parallel} at a time, ~{seed['training']:.0f} s each; "
        f"from {trials} trials here)"
    )


def _report(result: SeedResult) -> None:
    say(
        f"{result.dir.parent.name} seed {result.seed}: {result.status}"
        + (f", {result.child.training_seconds:.0f} s trained" if result.child else "")
    )
    if result.error:
        print(result.error, flush=True)


def budget_fractions(factor: float) -> list[float]:
    """Where rho is read along the long runs, as fractions of them: at the trial's budget (1 / factor), two
    points between and the end (4x: 0.25, 0.5, 0.75, 1)."""
    start = 1 / factor
    return [start + (1 - start) * i / 3 for i in range(4)]


def rho_by_budget(
    the_track: Any, scored: list[Config], short: list[float], short_seeds: list[list[float]], factor: float
) -> list[dict]:
    """Spearman's rho of the short scores against the long runs' scores as they stood at each of
    budget_fractions before the end (where the track recorded them: the classic track's curve, the LLM
    track's snapshots), with rho_interval's bootstrap. The end is the summary's own rho: _conclude adds it."""
    table = []
    for fraction in budget_fractions(factor)[:-1]:
        per_seed = [
            [the_track.rows_at(d, seed, fraction) for d, seed in zip(c.long_dirs, c.long_rows, strict=True)]
            for c in scored
        ]
        if any(rows is None or not rows for seeds in per_seed for rows in seeds):
            continue
        long_seeds = [[stats.eval_score(rows) for rows in seeds] for seeds in per_seed]
        with warnings.catch_warnings():  # every config scoring the same (e.g. 0 early on): rho undefined
            warnings.simplefilter("ignore", sps.ConstantInputWarning)
            rho = float(sps.spearmanr(short, [float(np.mean(s)) for s in long_seeds]).statistic)
        low, high = rho_interval(short_seeds, long_seeds)
        table.append({"budget_x": round(fraction * factor, 2), "rho": rho, "rho_ci": [low, high]})
    return table


def _conclude(ledger: Ledger, plan: Plan, chosen: list[Config], the_track: Any, png: Path | None) -> int:
    """The statistics, the summary after `---`, fidelity.json and the fidelity.tsv rows."""
    scored = [c for c in chosen if c.long_rows]
    if len(scored) < 2:
        say("fewer than two configs have a finished long seed: nothing to rank (see the seeds' run.log)")
        return 1
    short = [c.row.eval_score or 0.0 for c in scored]
    long = [stats.eval_score(c.rows) for c in scored]
    ranks = rank_stats(short, long)
    short_seeds = [c.row.per_seed_scores() or [s] for c, s in zip(scored, short, strict=True)]
    long_seeds = [list(stats.seed_scores(c.rows).values()) for c in scored]
    low, high = rho_interval(short_seeds, long_seeds)
    base = next((c for c in scored if c.role == "baseline"), None)
    noise = stats.NoiseFloor(prior_sd=the_track.seed_sd_prior)
    records, verdicts = [], []
    for c in chosen:
        record = _record(plan, c)
        if c.role == "kept" and base is not None and c.long_rows:
            comparison = stats.compare(c.rows, base.rows, noise=noise)
            record |= _holds(comparison)
            verdicts.append((c.row.run_id, comparison, record["holds"]))
        records.append(record)
    summary: dict[str, Any] = {
        "spearman_rho": ranks["rho"],
        "rho_ci": [low, high],
        "kendall_tau": ranks["tau"],
        "configs": len(scored),
        "long_budget": plan.long_budget,
        "short_budget": plan.context.budget,
        "short_winner_long_rank": f"{ranks['winner_rank']}/{len(scored)}",
        "regret": ranks["regret"],
        "kept_holds": f"{sum(v == 'holds' for _, _, v in verdicts)}/{len(verdicts)}",
    }
    by_budget = rho_by_budget(the_track, scored, short, short_seeds, plan.factor)
    by_budget.append({"budget_x": round(plan.factor, 2), "rho": ranks["rho"], "rho_ci": [low, high]})
    no_longer = {c.row.run_id: why for c in scored if (why := trained_no_longer(c))}
    record = {**summary, "rho_by_budget": by_budget, "no_longer": no_longer, "fidelity_id": plan.fidelity_id}
    atomic.write_text(plan.dir / "fidelity.json", json.dumps(record) + "\n")
    FIDELITY.append(ledger, records)
    events.write_quietly(plan.dir, "fidelity", say)
    if png is not None:
        say(f"wrote {plot(scored, long, png)}")
    lines = {
        k: (f"{v[0]:.2f} {v[1]:.2f}" if k == "rho_ci" else f"{v:.4g}" if isinstance(v, float) else v)
        for k, v in summary.items()
    }
    for run_id, comparison, verdict in verdicts:
        ci = stats.matching_interval(comparison)
        lines[f"kept/{run_id}"] = (
            f"delta {comparison.delta:+.4f} (90% CI {ci[0]:+.4f}..{ci[1]:+.4f}), "
            f"p {comparison.p_value:.3g}: {verdict}"
        )
    lines |= _config_lines(scored, noise, ledger.rows())
    for run_id, why in no_longer.items():
        lines[f"no_longer/{run_id}"] = why
    if len(scored) < FEW_CONFIGS:  # Spearman's rho over n configs takes few values: 2 give +1 or -1
        lines["note"] = (
            f"rho over {len(scored)} configs takes only a few values ({len(scored)} give "
            f"{'+1 or -1' if len(scored) == 2 else '-1, -0.5, 0.5 or 1'}): rank {FEW_CONFIGS} or more "
            "(--configs) to read it"
        )
    for point in by_budget:  # rho where the long runs stood at each multiple of the trial's budget
        low, high = point["rho_ci"]
        lines[f"rho_at_{point['budget_x']:g}x"] = f"{point['rho']:.2f} ({low:.2f} {high:.2f})"
    lines["fidelity_id"] = plan.fidelity_id
    sys.stdout.write("---\n" + "".join(f"{k}: {v}\n" for k, v in lines.items()))
    say(f"recorded in {FIDELITY.name} and runs/{plan.fidelity_id}/fidelity.json")
    return 0


def _outcomes(seed_dirs: list[Path]) -> list[SeedOutcome]:
    return [SeedOutcome.read(d) for d in seed_dirs]


def _most_steps(outcomes: list[SeedOutcome]) -> int:
    """The most steps any of these seeds trained (0 when none says)."""
    return max((o.steps or 0 for o in outcomes), default=0)


def trained_no_longer(c: Config) -> str | None:
    """Why `c`'s long seeds measure its short run again: they all stopped themselves before the long budget
    (none stopped by it) after no more steps than its trial's seeds trained (within 10%): the config has its
    own step limit (an LLM config's `max_steps`). None otherwise, or when a side recorded no steps."""
    long_outcomes = _outcomes(c.long_dirs)
    if any(o.stop_reason == "budget" for o in long_outcomes):
        return None
    short = _most_steps(_outcomes(sorted((paths.runs_dir() / c.row.run_id).glob("seed-*"))))
    long = _most_steps(long_outcomes)
    if not short or not long or long > 1.1 * short:
        return None
    return (
        f"its long seeds stopped themselves after {long} steps at most, its trial's after {short}: the "
        "config has its own step limit (such as max_steps): its long score is its short run's on other seeds"
    )


def _record(plan: Plan, c: Config) -> dict[str, Any]:
    lo, hi = stats.confidence_interval(c.rows) if c.long_rows else (None, None)
    return {
        "timestamp": datetime.now().isoformat(timespec="seconds"),
        "fidelity_id": plan.fidelity_id,
        "run_id": c.row.run_id,
        "role": c.role,
        "track": plan.context.track,
        "eval_hash": plan.context.eval_hash,
        "harness_hash": plan.context.harness_hash,
        "short_budget": plan.context.budget,
        "long_budget": plan.long_budget,
        "short_score": c.row.eval_score,
        "long_score": stats.eval_score(c.rows) if c.long_rows else None,
        "long_ci_low": lo,
        "long_ci_high": hi,
        "seeds": plan.seeds[: len(c.long_rows)] if c.long_rows else [],
    }


def _config_lines(scored: list[Config], noise: stats.NoiseFloor, rows: list[LedgerRow]) -> dict[str, str]:
    """Each re-trained config's score in its trial and at the long budget (`long/<run_id>`); each keep whose
    reference was another keep re-trained here, the keep against that reference's long seeds
    (`over_reference/<run_id>`): whether the decision holds, where `kept/` says whether its gain over the
    baseline does (a replay's second keep led its reference by +0.025 in its trial, +0.005 at 2x)."""
    lines = {}
    for c in scored:
        lines[f"long/{c.row.run_id}"] = f"{c.role}, short {c.row.eval_score or 0:.4f}, long " + (
            f"{stats.eval_score(c.rows):.4f}"
        )
    by_config = {c.row.config_hash: c for c in scored}
    config_of = {r.run_id: r.config_hash for r in rows}
    for c in scored:
        ref = by_config.get(config_of.get(c.row.reference_run, ""))
        if c.role != "kept" or ref is None or ref is c or ref.role != "kept":
            continue
        comparison = stats.compare(c.rows, ref.rows, noise=noise)
        low, high = stats.matching_interval(comparison)
        short = f", {c.row.delta:+.4f} in its trial" if c.row.delta is not None else ""
        lines[f"over_reference/{c.row.run_id}"] = (
            f"delta {comparison.delta:+.4f} over {ref.row.run_id}{short} (90% CI {low:+.4f}..{high:+.4f}), "
            f"p {comparison.p_value:.3g}: {HOLDS[comparison.verdict]}"
        )
    return lines


def _holds(c: stats.Comparison) -> dict[str, Any]:
    low, high = stats.matching_interval(c)
    return {
        "delta": c.delta,
        "delta_ci_low": low,
        "delta_ci_high": high,
        "p_value": c.p_value,
        "holds": HOLDS[c.verdict],
    }


def plot(scored: list[Config], long: list[float], out: Path) -> Path:
    """Short score against long score per config, the long score's interval as a bar, kept configs marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5))
    for c, y in zip(scored, long, strict=True):
        x = c.row.eval_score or 0.0
        lo, hi = stats.confidence_interval(c.rows)
        kept = c.role != "discarded"
        ax.errorbar(
            x, y, yerr=[[y - lo], [hi - y]], fmt="o" if kept else ".", color="C1" if kept else "C0", capsize=3
        )
        if kept:
            ax.annotate(
                f"{c.role} {c.row.run_id[-12:]}",
                (x, y),
                fontsize=7,
                xytext=(4, 4),
                textcoords="offset points",
            )
    ax.set_xlabel("eval_score at the trial's budget")
    ax.set_ylabel("eval_score at the long budget (95% CI)")
    ax.set_title("short vs long budget: does the ranking hold?")
    fig.tight_layout()
    atomic.write_bytes(out, _png(fig))
    plt.close(fig)
    return out


def _png(fig: Any) -> bytes:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    return buf.getvalue()


def main(**options: Any) -> int:
    """`autorl fidelity`, called with autorl.commands.cli_options.FidelityOptions' fields: exit 2 when it
    cannot start (RetrainError: nothing is recorded)."""
    try:
        return run_fidelity(**options)
    except RetrainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
