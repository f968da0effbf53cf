"""The early abort replayed on pools of real seeds: what its margin costs and saves, with the product's rule.

    # export: every seed of the pools' trials (ok rows whose description starts with the prefix), with its
    # final eval rows, its rung scores and its timings, from a records root's results.tsv and runs/
    uv run scripts/abort_replay.py export --root . --track classic --pool A="pool A" --pool B="pool B" \
        --out abort-pool.jsonl.gz
    # analyze: pairs resampled from the pools, each decided without the abort and with it at every margin
    uv run scripts/abort_replay.py analyze --pool-file abort-pool.jsonl.gz --track classic --reference A \
        --candidates B --parallel 2 --pairs 2000 --margins 0,0.5,1,1.5,2,3 --json abort.json --png abort.png

A seed of a pool trained to the end, so its rung scores are what a live rung would have scored (classic: its
final curve cut at the rung's fraction of the horizon, `Track.rows_at`, what the training child writes at the
rung; llm: its recorded rungs.jsonl, else the snapshots of along.jsonl at the rungs' fractions). A pair is a
reference of --reference-seeds (default --seeds) seeds of the --reference pool (its rung scores make
`rungs.AbortRule`, its rows the noise floor exactly as scripts/aa_pool.py's `decide` builds it) and a
candidate of --seeds other seeds of the reference pool (A/A) or of a candidate pool. Each pair is
decided twice on the same seeds:
  * without the abort: scripts/simulate_decisions.py's `decide_rule` (waves of --parallel,
    `stats.early_decision` after each wave but the last, `stats.sequential_verdict` at the look it ended);
  * with the abort at each margin: wave by wave, rung by rung, a candidate seed whose rung score is below
    `rule.threshold(k).bar` aborts the trial and its wave-mates stop at that rung too (autorl/engine/pool.py:
    they stop at their next rung); the waves before had their interim looks; the verdict is
    `result.conclude`'s: `stats.sequential_verdict` over the seeds run to the end at look = waves started,
    never `improved`, `inconclusive` when no seed ran to the end.
Cost: the seed budgets a candidate trained (1 a seed run to the end, the rung's fraction at an abort). Wall
time: per wave started, its longest seed's fraction x the pool's median training seconds + its median
overhead (start-up and eval). Dead ideas: pairs the plain rule does not call `improved`; winners: those it
does. Rates come with exact (Clopper-Pearson) 95% intervals of the pairs drawn (pairs of one pool share seeds:
those intervals are too narrow for the pool's own luck: --pool-boot B replays the A/A pairs on B copies of
the reference pool drawn with replacement for the spread that luck leaves; its centre runs high, see
`pool_boot`). --drop-tail K leaves out the
seeds more than K sds below their pool's mean: a diagnostic of what the rare bad seed does to a rate.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import aa_pool  # noqa: E402 (this directory is on sys.path)
from aa_pool import CONTEXT_KEYS  # noqa: E402
from simulate_decisions import decide_rule  # noqa: E402

from autorl.record import rungs, stats  # noqa: E402
from autorl.record.row import LedgerRow  # noqa: E402
from autorl.record.rungs import AbortRule, at  # noqa: E402

KEEP = ("env", "example_id", "sample", "score")  # an eval row as the pool file keeps it
EARLY = 0.3  # "aborted early": at a rung by this fraction of the first wave
MARGINS = "0,0.25,0.5,0.75,1,1.25,1.5,1.75,2,2.25,2.5,2.75,3"
Compare = Callable[[int], stats.Comparison]  # compare_at(k): the first k waves' seeds against the reference
CANDIDATE_LABEL = 1000  # candidate seeds are relabelled from here, the reference's from 0 (aa_pool.Pool.draw)


# ---------------------------------------------------------------------------------------------------- export
def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and math.isfinite(x)


def own_rows(seed_dir: Path) -> list[dict[str, Any]] | None:
    """A seed's final eval rows from its own seed-<k>/eval.jsonl (None: missing or not eval rows)."""
    from autorl.io.jsonl import eval_rows_problem, read_jsonl

    path = seed_dir / "eval.jsonl"
    rows = read_jsonl(path) if path.exists() else []
    return [{c: r[c] for c in KEEP} for r in rows] if rows and not eval_rows_problem(rows) else None


def pooled_rows(row: LedgerRow, runs: Path) -> dict[int, list[dict[str, Any]]]:
    """The trial's runs/<id>/eval.jsonl by seed, checked against its row's hash ({} when it cannot be)."""
    from autorl.record.ledger import LedgerError, reference_rows

    try:
        rows = reference_rows(row, runs)
    except LedgerError as exc:
        print(f"[replay] {exc}".splitlines()[0], flush=True)
        return {}
    out: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(int(r["seed"]), []).append({c: r[c] for c in KEEP})
    return out


def rung_scores(track: Any, seed_dir: Path, rows: list[dict[str, Any]]) -> tuple[dict[str, float], bool]:
    """The seed's score at each of the track's rungs, and whether a recorded rungs.jsonl disagrees (classic).
    classic: the final curve cut at the fraction, as the live rung scores it; llm: rungs.jsonl, else the
    snapshots of along.jsonl at the rungs' fractions, else none."""
    recorded = {r.rung: r.eval_score for r in rungs.read(seed_dir) if _finite(r.eval_score)}
    if track.name == "classic":
        cut = {
            k: round(stats.eval_score(track.rows_at(seed_dir, rows, f)), 6)
            for k, f in enumerate(track.rungs, 1)
        }
        differs = any(abs(cut[k] - v) > 1e-6 for k, v in recorded.items() if k in cut)
        return {str(k): v for k, v in cut.items()}, differs
    if recorded:
        return {str(k): float(v) for k, v in recorded.items()}, False
    return along_scores(track, seed_dir), False


def along_scores(track: Any, seed_dir: Path) -> dict[str, float]:
    """llm without rungs.jsonl: the along.jsonl snapshot at each rung's fraction (as llm Track.rows_at)."""
    from autorl.io.jsonl import read_jsonl

    path = seed_dir / "along.jsonl"
    points = read_jsonl(path) if path.exists() else []
    out = {}
    for k, f in enumerate(track.rungs, 1):
        here = [p for p in points if abs(p["fraction"] - f) < 1e-4 and _finite(p.get("eval_score"))]
        if here:
            out[str(k)] = float(here[0]["eval_score"])
    return out


def seed_records(
    row: LedgerRow, runs: Path, track: Any, max_wait: float | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """A trial's seeds run to the end, as pool-file lines (without `pool` and `seed`), and notes on those left
    out: also a seed whose cpu_wait_share is above `max_wait` (it shared the machine: a wall-clock budget
    bought it less training). The ledger's `seeds` lists them by position: seed-<k> is the k-th."""
    from autorl.record.outcome import SeedOutcome

    run_dir, out, notes = runs / row.run_id, [], []
    pooled: dict[int, list[dict[str, Any]]] | None = None
    for k, seed in enumerate(int(s) for s in row.seed_list):
        seed_dir = run_dir / f"seed-{k}"
        outcome = SeedOutcome.read(seed_dir)
        if outcome.seed is not None and outcome.seed != seed:
            raise SystemExit(f"{seed_dir}: outcome.json says seed {outcome.seed}, the ledger's seeds {seed}")
        wait = outcome.cpu_wait_share
        if max_wait is not None and wait is not None and wait > max_wait:
            notes.append(
                f"{row.run_id} seed-{k}: left out, cpu_wait_share {wait} > {max_wait} (a busy machine)"
            )
            continue
        rows = own_rows(seed_dir)
        if rows is None:
            pooled = pooled_rows(row, runs) if pooled is None else pooled
            rows = pooled.get(seed)
        if not rows:
            notes.append(f"{row.run_id} seed-{k}: no final eval rows (aborted, or its eval failed)")
            continue
        scores, differs = rung_scores(track, seed_dir, rows)
        if differs:
            notes.append(f"{row.run_id} seed-{k}: rungs.jsonl differs from the curve cut at the rungs")
        line = {"rows": rows, "rungs": scores, "training_seconds": outcome.training_seconds}
        rung_s = sum(r.eval_seconds for r in rungs.read(seed_dir))  # scored paused: wall, not training
        out.append({**line, "overhead_seconds": (outcome.startup_seconds or 0.0) + rung_s})
    # the ledger keeps the trial's eval seconds only: each seed evaluated gets its share
    share = (row.eval_seconds or 0.0) / len(out) if out else 0.0
    for r in out:
        r["overhead_seconds"] = round(r["overhead_seconds"] + share, 3)
    return out, notes


def export(args: argparse.Namespace) -> None:
    from autorl.engine.track import get_track
    from autorl.record.ledger import Ledger
    from autorl.record.row import format_cell

    track = get_track(args.track)
    rows = Ledger(args.root / "results.tsv").rows()
    ledger = [r for r in rows if (r.status, r.track) == ("ok", args.track)]
    # run ids start with their start time (YYYYmmdd-HHMMSS): a pool of one session's trials
    ledger = [
        r
        for r in ledger
        if args.runs_from <= r.run_id and (not args.runs_before or r.run_id < args.runs_before)
    ]
    with gzip.open(args.out, "wt", encoding="utf-8") as f:
        for spec in args.pool:
            name, _, prefix = spec.partition("=")
            mine = [r for r in ledger if r.description.startswith(prefix)]
            if not name or not mine:
                raise SystemExit(f"--pool {spec!r}: no ok {args.track} trial whose description starts so")
            if len({r.config_hash for r in mine}) > 1:
                raise SystemExit(f"pool {name}: trials of more than one config")
            header = {"pool": name, "header": True, "track": args.track, "description": prefix}
            header |= {"run_ids": [r.run_id for r in mine], "config_hash": mine[0].config_hash}
            context = {k: format_cell(k, getattr(mine[0], k)) for k in CONTEXT_KEYS}  # the ledger's cells
            header |= {"fractions": list(track.rungs), "context": context}
            f.write(json.dumps(header) + "\n")
            found = [seed_records(row, args.root / "runs", track, args.max_cpu_wait) for row in mine]
            seeds, notes = [s for got, _ in found for s in got], [n for _, said in found for n in said]
            for k, seed in enumerate(seeds):
                f.write(json.dumps({"pool": name, "seed": k, **seed}) + "\n")
            with_rungs = sum(bool(s["rungs"]) for s in seeds)
            print(f"[replay] pool {name}: {len(seeds)} seeds of {len(mine)} trials, {with_rungs} with rungs")
            for note in notes:
                print(f"[replay]   {note}")
    print(f"[replay] wrote {args.out}")


# ---------------------------------------------------------------------------------------------------- pools
@dataclass
class Seed:
    rows: list[dict[str, Any]]
    rungs: dict[int, float]  # rung (1-based) -> its score
    training_seconds: float | None
    overhead_seconds: float
    score: float  # its eval_score


@dataclass
class Pool:
    name: str
    header: dict[str, Any]
    seeds: list[Seed]

    @property
    def ledger_row(self) -> LedgerRow:
        """The ledger row a reference drawn from this pool is recorded under (the noise floor's context)."""
        base = {"track": self.header.get("track", ""), "eval_hash": "", "harness_hash": "", "budget": ""}
        base |= {"status": "ok", "config_hash": self.header.get("config_hash") or self.name}
        return LedgerRow.from_json({**base, **(self.header.get("context") or {})})

    def medians(self) -> tuple[float, float]:
        """(training seconds, overhead seconds) of its median seed; training 1 when none is known (the wall
        time is then in units of one seed's training)."""
        train = [s.training_seconds for s in self.seeds if s.training_seconds]
        overhead = float(np.median([s.overhead_seconds for s in self.seeds]))
        return float(np.median(train)) if train else 1.0, overhead


def read_pool_file(path: Path) -> dict[str, Pool]:
    headers: dict[str, dict[str, Any]] = {}
    seeds: dict[str, list[Seed]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r.get("header"):
                headers[r["pool"]] = r
                continue
            rungs = {int(k): float(v) for k, v in (r.get("rungs") or {}).items() if _finite(v)}
            times = r.get("training_seconds"), float(r.get("overhead_seconds") or 0.0)
            seeds.setdefault(r["pool"], []).append(
                Seed(r["rows"], rungs, *times, stats.eval_score(r["rows"]))
            )
    return {name: Pool(name, headers.get(name, {}), seeds.get(name, [])) for name in {**headers, **seeds}}


def read_pool_files(paths: list[Path]) -> dict[str, Pool]:
    """The pools of several export files, a pool named in more than one the union of its seeds (of one
    config: the same name with another config_hash is refused)."""
    pools: dict[str, Pool] = {}
    for path in paths:
        for name, pool in read_pool_file(path).items():
            if (had := pools.get(name)) is None:
                pools[name] = pool
                continue
            if had.header.get("config_hash") != pool.header.get("config_hash"):
                raise SystemExit(f"pool {name}: another config in {path} than in the files before it")
            had.seeds += pool.seeds
            had.header["run_ids"] = [*had.header.get("run_ids", []), *pool.header.get("run_ids", [])]
    return pools


def pool_means(pool: Pool, fractions: tuple[float, ...]) -> str:
    """The pool's mean score at each rung and at the end, over its seeds (sd in brackets)."""
    parts = []
    for k, f in enumerate(fractions, 1):
        if at_k := [x.rungs[k] for x in pool.seeds if k in x.rungs]:
            parts.append(
                f"at {f:.0%} {np.mean(at_k):.3f} ({np.std(at_k, ddof=1) if len(at_k) > 1 else 0:.3f})"
            )
    ends = [x.score for x in pool.seeds]
    return ", ".join(
        [*parts, f"end {np.mean(ends):.3f} ({np.std(ends, ddof=1) if len(ends) > 1 else 0:.3f})"]
    )


def relabel(seeds: list[Seed], first: int) -> list[list[dict[str, Any]]]:
    """Each seed's rows, labelled first + position (a seed drawn twice stays two seeds)."""
    return [[{**r, "seed": first + k} for r in s.rows] for k, s in enumerate(seeds)]


def reference_noise(ref_rows: list[dict[str, Any]], row: LedgerRow, prior: float) -> stats.NoiseFloor:
    """The noise floor as aa_pool.decide builds it: a ledger holding the reference trial alone."""
    return aa_pool.reference_noise(ref_rows, row, prior)


# ---------------------------------------------------------------------------------------------------- replay
@dataclass(frozen=True)
class Setting:
    parallel: int
    fractions: tuple[float, ...]  # the track's rungs
    prior: float  # Track.seed_sd_prior
    margins: tuple[float, ...]
    judged: tuple[int, ...] = (1, 2)  # the rungs (1-based) the abort judges (--rungs)


@dataclass(frozen=True)
class Ending:
    """How one candidate trial ended."""

    verdict: str
    waves: int  # waves started
    cost: float  # seed budgets trained
    wall: float  # seconds (the model in the module docstring)
    abort_wave: int = 0  # 0: not aborted
    abort_fraction: float = 0.0


def wall(trained: list[float], medians: tuple[float, float]) -> float:
    """Per wave started: its longest seed's fraction x the median training seconds + the median overhead."""
    return sum(f * medians[0] + medians[1] for f in trained)


def abort_fraction(wave: list[Seed], bars: dict[int, float], fractions: tuple[float, ...]) -> float | None:
    """The first rung (in fraction order) at which a seed of the wave is below the bar (None: none is). A
    seed without a score at a rung goes on, as a failed rung eval does."""
    for k, f in sorted(enumerate(fractions, 1), key=lambda kf: kf[1]):
        bar = bars.get(k)
        if bar is not None and any(k in s.rungs and s.rungs[k] < bar for s in wave):
            return f
    return None


def aborted_verdict(compare_at: Compare, started: int, looks: int) -> str:
    """result.conclude's verdict on a trial aborted in wave `started`: the seeds of the waves before, judged
    at look `started` (stats.looks counts every seed started), never `improved`; none: inconclusive."""
    if started <= 1:
        return "inconclusive"
    verdict = stats.sequential_verdict(compare_at(started - 1), started, looks)
    return "inconclusive" if verdict == "improved" else verdict


def with_abort(
    rule: AbortRule, cand: list[Seed], compare_at: Compare, s: Setting, medians: tuple[float, float]
) -> Ending:
    """The trial with the early abort: wave by wave, rung by rung; completed waves have their interim look."""
    n, p = len(cand), s.parallel
    looks = stats.looks(n, n, p)[1]
    bars = {
        k: t.bar
        for k, f in enumerate(s.fractions, 1)
        if k in s.judged and (t := rule.threshold(f)) is not None
    }
    trained: list[float] = []
    for w in range(1, looks + 1):
        wave = cand[(w - 1) * p : w * p]
        f = abort_fraction(wave, bars, s.fractions)
        if f is not None:
            trained.append(f)
            cost = (w - 1) * p + len(wave) * f
            return Ending(aborted_verdict(compare_at, w, looks), w, cost, wall(trained, medians), w, f)
        trained.append(1.0)
        c = compare_at(w)
        if w == looks or stats.early_decision(c, w, looks) is not None:
            verdict = stats.sequential_verdict(c, w, looks)
            return Ending(verdict, w, float(min(n, w * p)), wall(trained, medians))
    raise AssertionError("unreachable")


def replay_pair(
    ref: list[Seed], cand: list[Seed], ledger_row: LedgerRow, medians: tuple[float, float], s: Setting
) -> tuple[Ending, list[Ending]]:
    """One pair: (its ending without the abort, its ending with the abort at each margin). The comparisons are
    cached per completed waves: the abort's verdicts reuse the plain rule's."""
    ref_rows = [r for rows in relabel(ref, 0) for r in rows]
    cand_rows = relabel(cand, CANDIDATE_LABEL)
    noise = reference_noise(ref_rows, ledger_row, s.prior)
    n, p = len(cand), s.parallel
    looks = stats.looks(n, n, p)[1]

    @functools.cache
    def compare_at(waves: int) -> stats.Comparison:
        return stats.compare([r for rows in cand_rows[: waves * p] for r in rows], ref_rows, noise=noise)

    verdict, look = decide_rule(compare_at, looks)
    plain = Ending(verdict, look, float(min(n, look * p)), wall([1.0] * look, medians))
    reference = {at(f): tuple(x.rungs[k] for x in ref if k in x.rungs) for k, f in enumerate(s.fractions, 1)}
    rules = [AbortRule("ref", reference, m, s.prior) for m in s.margins]
    return plain, [with_abort(rule, cand, compare_at, s, medians) for rule in rules]


@dataclass
class Replayed:
    """Pairs replayed: without the abort (plain_*, one per pair) and with it (a column per margin)."""

    plain_verdict: np.ndarray
    plain_cost: np.ndarray
    plain_wall: np.ndarray
    verdict: np.ndarray
    cost: np.ndarray
    wall: np.ndarray
    abort_wave: np.ndarray  # 0: not aborted
    abort_fraction: np.ndarray

    @classmethod
    def of(cls, results: list[tuple[Ending, list[Ending]]]) -> Replayed:
        plain = {
            f"plain_{k}": np.array([getattr(p, k) for p, _ in results]) for k in ("verdict", "cost", "wall")
        }
        keys = ("verdict", "cost", "wall", "abort_wave", "abort_fraction")
        columns = {k: np.array([[getattr(e, k) for e in ends] for _, ends in results]) for k in keys}
        return cls(**plain, **{k: v.reshape(len(results), -1) for k, v in columns.items()})

    @classmethod
    def concat(cls, parts: list[Replayed]) -> Replayed:
        return cls(*(np.concatenate([getattr(p, k) for p in parts]) for k in cls.__dataclass_fields__))

    @property
    def aborted(self) -> np.ndarray:
        return self.abort_wave > 0

    @property
    def early(self) -> np.ndarray:
        """Aborted by EARLY of one seed's budget: at a rung by that fraction, in the first wave."""
        return (self.abort_wave == 1) & (self.abort_fraction <= EARLY + 1e-9)


def replay_pairs(a: Pool, cand_pool: Pool | None, draws: list[tuple[Any, Any]], s: Setting) -> Replayed:
    """The pairs at these (reference indices in a, candidate indices in cand_pool, or in a for A/A); the
    reference is a's, so is its ledger row (the noise floor); the wall time is the candidate pool's."""
    other = cand_pool or a
    medians, row = other.medians(), a.ledger_row
    sides = [([a.seeds[i] for i in ref], [other.seeds[i] for i in cand]) for ref, cand in draws]
    return Replayed.of([replay_pair(ref, cand, row, medians, s) for ref, cand in sides])


def draw(
    a: Pool, cand_pool: Pool | None, n: int, count: int, rng: np.random.Generator, r: int | None = None
) -> list[tuple]:
    """`count` pairs: the reference r (default n) seeds of a, the candidate n other seeds of a (A/A) or n of
    cand_pool."""
    r = r or n
    out = []
    for _ in range(count):
        perm = rng.permutation(len(a.seeds))
        cand = perm[r : r + n] if cand_pool is None else rng.permutation(len(cand_pool.seeds))[:n]
        out.append((perm[:r], cand))
    return out


def lucky_draws(
    a: Pool, n: int, q: float, count: int, rng: np.random.Generator, r: int | None = None
) -> tuple[list, float]:
    """A/A pairs whose reference is lucky: among ceil(count / q) draws of r (default n) seeds of a, those
    whose mean eval_score (the mean of its seeds' scores) is in the top q; each with n other seeds of a.
    (pairs, cut)"""
    r = r or n
    scores = np.array([s.score for s in a.seeds])
    perms = np.argsort(rng.random((math.ceil(count / q), len(scores))), axis=1)[:, : r + n]
    means = scores[perms[:, :r]].mean(axis=1)
    cut = float(np.quantile(means, 1 - q))
    return [(p[:r], p[r:]) for p in perms[means >= cut][:count]], cut


# ---------------------------------------------------------------------------------------------------- report
def rate(hits: np.ndarray) -> dict[str, Any]:
    """k/n with its exact (Clopper-Pearson) 95% interval, as aa_pool._rate computes it."""
    from scipy.stats import binomtest

    k, n = int(np.sum(hits)), int(np.size(hits))
    ci = binomtest(k, n).proportion_ci(0.95, method="exact") if n else None
    return {"k": k, "n": n, "rate": k / n if n else None, "low": ci and ci.low, "high": ci and ci.high}


def error_figures(r: Replayed, j: int) -> dict[str, Any]:
    """A/A: false `improved` and false `worse`, with the abort and without it; the share aborted."""
    figures: dict[str, Any] = {"pairs": len(r.plain_verdict), "aborted": rate(r.aborted[:, j])}
    for verdict in ("improved", "worse"):
        both = {"abort": rate(r.verdict[:, j] == verdict), "none": rate(r.plain_verdict == verdict)}
        figures[f"false_{verdict}"] = both
    ran, counts = np.unique(r.plain_cost[r.plain_verdict == "worse"], return_counts=True)
    figures["worse_by_seeds_none"] = {f"{k:g}": int(c) for k, c in zip(ran, counts, strict=True)}
    return figures


def dead_figures(r: Replayed, j: int) -> dict[str, Any]:
    """Pairs the plain rule does not keep: what they cost with the abort and without, and how soon it came."""
    dead = r.plain_verdict != "improved"
    figures: dict[str, Any] = {"pairs": int(dead.sum())}
    for name, cost in (("cost", r.cost[dead, j]), ("cost_none", r.plain_cost[dead])):
        figures[f"median_{name}"] = float(np.median(cost)) if cost.size else None
        figures[f"mean_{name}"] = float(np.mean(cost)) if cost.size else None
    return {**figures, "aborted": rate(r.aborted[dead, j]), "aborted_by_30pct": rate(r.early[dead, j])}


def margin_report(m: float, j: int, kinds: dict[str, Replayed], lucky: Replayed | None) -> dict[str, Any]:
    """One margin's figures: A/A errors, dead ideas' cost, winners' false aborts (each then lost: never
    `improved`), decisions an hour (the same pairs' mean wall time) and lucky references' errors."""
    every = {**kinds, "pooled": Replayed.concat(list(kinds.values()))}
    hour = {k: (3600 / np.mean(r.wall[:, j]), 3600 / np.mean(r.plain_wall)) for k, r in every.items()}
    won = {k: r.plain_verdict == "improved" for k, r in every.items()}
    winners = {
        k: {"pairs": int(won[k].sum()), "false_abort": rate(r.aborted[won[k], j])} for k, r in every.items()
    }
    return {
        "margin": m,
        "aa": error_figures(kinds["A/A"], j),
        "dead": {k: dead_figures(r, j) for k, r in every.items()},
        "winners": winners,
        "throughput": {k: {"per_hour": a, "per_hour_none": b, "ratio": a / b} for k, (a, b) in hour.items()},
        "lucky": error_figures(lucky, j) if lucky is not None else None,
    }


def verdict_figures(r: Replayed) -> dict[str, Any]:
    """A kind's verdicts without the abort (A/B: the rule's power and its `worse`; a candidate pool of the
    reference's own config from another session: its errors under the machine's drift), and the seeds a
    pair ran: the futility stop's share."""
    return {
        **{v: rate(r.plain_verdict == v) for v in ("improved", "worse", "inconclusive")},
        "median_seeds": float(np.median(r.plain_cost)),
        "stopped_after_1": rate(r.plain_cost <= 1),
    }


def pct(figure: dict[str, Any] | None) -> str:
    return "-" if not figure or figure["rate"] is None else f"{figure['rate']:.1%}"


def num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def print_report(report: dict[str, Any]) -> None:
    """The A/A errors by margin (without the abort first), then the costs and throughput by kind."""
    first, rows = report["margins"][0], report["margins"]
    print("margin, A/A false improved, false worse, aborted; A/A against lucky references: false worse")
    for side, fig in [("none", first)] + [("abort", fig) for fig in rows]:
        aa, lucky = fig["aa"], (fig["lucky"] or {"false_worse": {}})["false_worse"]
        margin, aborted = ("none", None) if side == "none" else (f"{fig['margin']:g}", aa["aborted"])
        print(
            f"{margin:>6}  {pct(aa['false_improved'][side]):>6} {pct(aa['false_worse'][side]):>6} "
            f"{pct(aborted):>6} {pct(lucky.get(side)):>6}"
        )
    for name, fig in (("A/A", first["aa"]), ("A/A against lucky references", first["lucky"])):
        if fig is not None:  # where the plain rule's false `worse` falls: after how many candidate seeds
            seen = ", ".join(f"{k}: {c}" for k, c in fig["worse_by_seeds_none"].items()) or "none"
            print(f"{name}: without the abort, `worse` after (seeds run: pairs) {seen}")
    print("kind: without the abort, improved / worse / inconclusive; median seeds a pair ran; ended after 1")
    for kind, v in report["verdicts"].items():
        print(
            f"  {kind:<8} {pct(v['improved']):>6} / {pct(v['worse']):>6} / {pct(v['inconclusive']):>6}; "
            f"{v['median_seeds']:g} seeds; {pct(v['stopped_after_1'])}"
        )
    for kind in [*report["kinds"], "pooled"]:
        dead = first["dead"][kind]
        print(
            f"{kind}: margin, dead ideas' median / mean cost (without the abort "
            f"{num(dead['median_cost_none'])} / {num(dead['mean_cost_none'])}), aborted by 30%, winners' "
            "false abort, decisions an hour x"
        )
        for fig in rows:
            dead, win = fig["dead"][kind], fig["winners"][kind]
            print(
                f"  {fig['margin']:>6g}  {num(dead['median_cost']):>5} / {num(dead['mean_cost']):>5}  "
                f"{pct(dead['aborted_by_30pct']):>6}  {pct(win['false_abort']):>6} of {win['pairs']:<5} "
                f"{fig['throughput'][kind]['ratio']:.2f}"
            )


SHARES = (  # the trade-off's shares: (label, where in a margin's figures, style)
    ("dead ideas aborted by 30%", ("dead", "pooled", "aborted_by_30pct"), "b-s"),
    ("winners aborted (false abort)", ("winners", "pooled", "false_abort"), "r-^"),
    ("A/A false worse", ("aa", "false_worse", "abort"), "g-v"),
)


def plot(report: dict[str, Any], path: Path) -> None:
    """The trade-off by margin: the dead ideas' median cost (left axis) and three shares (right axis)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs, x = report["margins"], [f["margin"] for f in report["margins"]]
    fig, cost = plt.subplots(figsize=(8, 5))
    cost.plot(x, [f["dead"]["pooled"]["median_cost"] for f in figs], "k-o", label="dead ideas: median cost")
    title = f"early abort, {report['track']}: {report['seeds']} seeds, {report['parallel']} at a time"
    cost.set(xlabel="margin (seed spreads at the rung)", ylabel="seed budgets", title=title)
    shares = cost.twinx()
    shares.set(ylabel="share of pairs", ylim=(0, 1))
    for label, (a, b, c), style in SHARES:
        shares.plot(x, np.array([f[a][b][c]["rate"] for f in figs], dtype=float), style, label=label)
    fig.legend(loc="lower center", ncol=2, fontsize=8)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------- analyze
def replay(args: argparse.Namespace, pools: dict[str, Pool], s: Setting, n: int) -> tuple[dict, Any]:
    """Every kind's pairs (A/A first) and the lucky references' A/A pairs, replayed."""
    rng = np.random.default_rng(args.rng)
    a = pools[args.reference]
    r = args.reference_seeds
    kinds = {"A/A": replay_pairs(a, None, draw(a, None, n, args.pairs, rng, r), s)}
    for name in args.candidates:
        kinds[name] = replay_pairs(a, pools[name], draw(a, pools[name], n, args.pairs, rng, r), s)
    if args.lucky <= 0 or args.lucky_pairs <= 0:
        return kinds, None
    pairs, args.lucky_cut = lucky_draws(a, n, args.lucky, args.lucky_pairs, rng, r)
    return kinds, replay_pairs(a, None, pairs, s)


def drop_tail(pools: dict[str, Pool], k: float) -> None:
    """A diagnostic (--drop-tail K): leave out each pool's seeds more than K of its seed sds below its mean
    (the rare bad seed), to show how much of a rate that tail makes."""
    for name, pool in pools.items():
        scores = np.array([x.score for x in pool.seeds])
        if len(scores) < 3:
            continue
        cut = scores.mean() - k * scores.std(ddof=1)
        dropped = sorted(float(x) for x in scores[scores < cut])
        pool.seeds = [x for x in pool.seeds if x.score >= cut]
        print(f"[replay] pool {name}: left out {len(dropped)} seeds below {cut:.3f}: {dropped}", flush=True)


def pool_boot(args: argparse.Namespace, a: Pool, s: Setting, n: int) -> dict[str, Any]:
    """The A/A verdicts' rates over --pool-boot copies of the reference pool drawn with replacement (as many
    seeds), --pairs pairs each, the abort off: the spread a pool of this size leaves in a rate, which
    drawing more pairs from the one pool cannot remove. A seed drawn twice into a copy may sit twice on one
    side of a pair, never on both (that would make the sides alike); twice on one side it shrinks that
    side's spread, so the copies' rates run high (a t test's): read the width, not the centre. Each copy's
    rate also carries its own pairs' binomial noise."""
    rng = np.random.default_rng(args.rng + 1)
    r, plain = args.reference_seeds or n, replace(s, margins=())
    rates: dict[str, list[float]] = {"improved": [], "worse": []}
    for _ in range(args.pool_boot):
        origin = rng.integers(0, len(a.seeds), len(a.seeds))  # the copy's seeds, as indices into a
        copy = Pool(a.name, a.header, [a.seeds[i] for i in origin])
        draws = []
        while len(draws) < args.pairs:
            perm = rng.permutation(len(origin))
            ref, taken = perm[:r], set(origin[perm[:r]].tolist())
            cand = [j for j in perm[r:] if origin[j] not in taken][:n]
            if len(cand) == n:
                draws.append((ref, np.array(cand)))
        got = replay_pairs(copy, None, draws, plain)
        for verdict, found in rates.items():
            found.append(float(np.mean(got.plain_verdict == verdict)))
    quantiles = {v: [float(q) for q in np.quantile(x, [0.05, 0.5, 0.95])] for v, x in rates.items()}
    return {"pools": args.pool_boot, "pairs_each": args.pairs, "quantiles_5_50_95": quantiles}


def check_pools(args: argparse.Namespace, pools: dict[str, Pool], n: int) -> None:
    for name in [args.reference, *args.candidates]:
        if name not in pools:
            files = ", ".join(map(str, args.pool_file))
            raise SystemExit(f"no pool {name!r} in {files} (they have {sorted(pools)})")
        if (track := pools[name].header.get("track")) not in (None, args.track):
            raise SystemExit(f"pool {name} is of the {track} track, not {args.track}")
        need = n + (args.reference_seeds or n) if name == args.reference else n
        if len(pools[name].seeds) < need:
            raise SystemExit(f"pool {name}: {len(pools[name].seeds)} seeds, too few ({need} needed)")


def analyze(args: argparse.Namespace) -> dict[str, Any]:
    from autorl.engine.track import get_track

    t0, track = time.monotonic(), get_track(args.track)
    pools, n = read_pool_files(args.pool_file), args.seeds or track.default_seeds
    if args.drop_tail:
        drop_tail(pools, args.drop_tail)
    check_pools(args, pools, n)
    margins = tuple(float(m) for m in args.margins.split(",") if m.strip())
    judged = (
        tuple(int(k) for k in args.rungs.split(",")) if args.rungs else tuple(range(1, len(track.rungs) + 1))
    )
    s = Setting(args.parallel, tuple(track.rungs), track.seed_sd_prior, margins, judged)
    sizes = ", ".join(f"pool {k} {len(p.seeds)} seeds" for k, p in pools.items())
    looks = stats.looks(n, n, args.parallel)[1]
    setting = f"{n} seeds a side, {args.parallel} at a time ({looks} looks), {args.pairs} pairs a kind"
    if args.reference_seeds:
        setting += f", the reference {args.reference_seeds} seeds"
    print(f"[replay] {args.track}: {sizes}; {setting}, margins {list(margins)}", flush=True)
    for name, pool in pools.items():
        print(f"[replay] pool {name}: {pool_means(pool, s.fractions)}", flush=True)
    kinds, lucky = replay(args, pools, s, n)
    report: dict[str, Any] = {"track": args.track, "reference": args.reference, "kinds": list(kinds)}
    report |= {"seeds": n, "parallel": args.parallel, "pairs": args.pairs, "rungs": list(s.fractions)}
    report["reference_seeds"] = args.reference_seeds or n
    report["judged"] = [s.fractions[k - 1] for k in s.judged]
    report["pools"] = {k: len(p.seeds) for k, p in pools.items()}
    report["medians"] = {k: p.medians() for k, p in pools.items()}  # (training s, overhead s)
    report["lucky"] = {"q": args.lucky, "pairs": args.lucky_pairs, "cut": getattr(args, "lucky_cut", None)}
    report["margins"] = [margin_report(m, j, kinds, lucky) for j, m in enumerate(margins)]
    report["verdicts"] = {k: verdict_figures(r) for k, r in kinds.items()}
    report["drop_tail"] = args.drop_tail
    print_report(report)
    if args.pool_boot:
        boot = report["pool_boot"] = pool_boot(args, pools[args.reference], s, n)
        for verdict, (low, mid, high) in boot["quantiles_5_50_95"].items():
            print(
                f"A/A without the abort: {verdict} over {boot['pools']} copies of pool {args.reference} "
                f"drawn with replacement ({boot['pairs_each']} pairs each): median {mid:.1%}, 90% "
                f"{low:.1%}..{high:.1%}"
            )
    report["seconds"] = round(time.monotonic() - t0, 1)
    print(f"[replay] took {report['seconds']:.1f} s", flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.png:
        plot(report, args.png)
    return report


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="the pools' seeds with their rows, rungs and timings, in one file")
    ex.add_argument("--root", type=Path, required=True, help="the records root (results.tsv, runs/)")
    ex.add_argument("--pool", action="append", required=True, metavar="NAME=DESCRIPTION_PREFIX")
    ex.add_argument("--track", choices=("llm", "classic"), required=True)
    ex.add_argument("--out", type=Path, required=True)
    ex.add_argument(
        "--max-cpu-wait", type=float, default=None, help="leave out seeds whose cpu_wait_share is above this"
    )
    ex.add_argument("--runs-from", default="", metavar="RUN_ID", help="only trials started at or after it")
    ex.add_argument("--runs-before", default="", metavar="RUN_ID", help="only trials started before it")
    an = sub.add_parser("analyze", help="pairs decided without the abort and with it at each margin")
    an.add_argument("--pool-file", type=Path, action="append", required=True, help="an export (repeatable)")
    an.add_argument("--reference", required=True, help="the pool references (and A/A candidates) come from")
    an.add_argument("--candidates", nargs="*", default=[], help="pools of candidate seeds (A/B pairs)")
    an.add_argument("--track", choices=("llm", "classic"), required=True)
    an.add_argument("--seeds", type=int, default=None, help="seeds a side (default: the track's)")
    an.add_argument(
        "--reference-seeds",
        type=int,
        default=None,
        help="the reference's seeds (default: --seeds); run.py pools a config's trials, so the baseline "
        "and its repeat are twice the track's seeds",
    )
    an.add_argument("--parallel", type=int, required=True, help="seeds at once (a wave)")
    an.add_argument("--pairs", type=int, default=2000, help="pairs drawn per kind")
    an.add_argument("--margins", default=MARGINS, help="comma-separated margins, in seed spreads")
    an.add_argument("--lucky", type=float, default=0.05, help="the top share of reference draws called lucky")
    an.add_argument("--lucky-pairs", type=int, default=500, help="A/A pairs against lucky references")
    an.add_argument("--rungs", default="", help="the rungs the abort judges, 1-based (default: all)")
    an.add_argument(
        "--pool-boot",
        type=int,
        default=0,
        metavar="B",
        help="A/A rates over B pools resampled (--pairs each)",
    )
    an.add_argument(
        "--drop-tail",
        type=float,
        default=0.0,
        metavar="K",
        help="leave out seeds K sds below their pool's mean",
    )
    an.add_argument("--rng", type=int, default=0)
    an.add_argument("--json", type=Path, default=None)
    an.add_argument("--png", type=Path, default=None)
    args = p.parse_args(argv)
    if args.command == "export":
        export(args)
        return None
    return analyze(args)


if __name__ == "__main__":
    main()
