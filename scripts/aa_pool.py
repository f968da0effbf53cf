"""The decision rule's error rates from pools of real seeds: the runner's own verdict on resampled pairs.

    # collect: trials of config A and of config B through run.py, interleaved (A, B, A, B, ...) so that the
    # machine's drift falls on both alike; every seed's eval rows stay in runs/<id>/eval.jsonl
    uv run scripts/aa_pool.py collect --track llm --budget 90 --a-seeds 60 --b-seeds 30 \
        --per-round 2 1 --b-set trainer.optim.lr=3e-5
    # analyze: draw disjoint pairs from the pools and decide each with the runner's code
    uv run scripts/aa_pool.py analyze --track llm --pairs 2000 --parallel 1
    # export the pools to one file; analyze it again anywhere (the studies commit theirs)
    uv run scripts/aa_pool.py export --track llm --out pool.jsonl.gz
    uv run scripts/aa_pool.py analyze --track llm --pairs 2000 --parallel 1 --pool-file pool.jsonl.gz

A trial's verdict sees nothing but the per-seed eval rows of both sides and the ledger's noise floor, so pairs
drawn from pools of seeds that really trained are decided as real trial pairs are: `autorl.record.stats`'s
`noise_floor` over a ledger holding the reference trial, then the candidate's seeds in waves of `--parallel`
(the machine's slots, as a trial runs them) with `stats.interim_look` after each wave but the last (both early
stops) and `stats.sequential_verdict` at the look it ended: the functions run.py calls.
  * A/A: reference and candidate are disjoint sets of A's seeds: `improved` is a false keep, `worse` a
    false alarm.
  * A/B: the reference from A, the candidate from B: `improved` is a detection (power).
Rates come with the exact (Clopper-Pearson) interval of the pairs drawn and, because pairs drawn from one
pool share seeds, with a bootstrap over the pool's seeds (`--pool-boot`): the uncertainty that more pairs
from the same pool cannot remove.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from simulate_decisions import decide_before, decide_rule  # noqa: E402 (this directory is on sys.path)

POOL_A, POOL_B = "pool A", "pool B"  # the trials' descriptions: how analyze finds them in the ledger


def _root() -> Path:
    from autorl.io import paths

    return paths.repo_root()


def _pool_configs(args: argparse.Namespace, pool_dir: Path) -> dict[str, Path]:
    """A (the config as it is) and B (A with --b-set applied), written once into pool_dir."""
    import tomlkit

    pool_dir.mkdir(parents=True, exist_ok=True)
    text = args.config.read_text(encoding="utf-8")
    doc = tomlkit.parse(text)
    for assignment in args.b_set:
        key, _, value = assignment.partition("=")
        *parents, leaf = key.split(".")
        table = doc
        for name in parents:
            table = table[name]
        table[leaf] = tomlkit.parse(f"v = {value}")["v"]
    paths = {POOL_A: pool_dir / "a.toml", POOL_B: pool_dir / "b.toml"}
    for name, content in ((POOL_A, text), (POOL_B, tomlkit.dumps(doc))):
        if paths[name].exists() and paths[name].read_text(encoding="utf-8") != content:
            raise SystemExit(f"{paths[name]} differs from this run's {name} config: use another --pool-dir")
        paths[name].write_text(content, encoding="utf-8")
    return paths


def _seeds_done(track: str) -> dict[str, int]:
    from autorl.record.ledger import Ledger

    done = {POOL_A: 0, POOL_B: 0}
    path = _root() / "results.tsv"
    for row in Ledger(path).rows() if path.exists() else []:
        if row.track == track and row.status == "ok" and row.description in done:
            done[row.description] += len(row.per_seed_scores())
    return done


def collect(args: argparse.Namespace) -> None:
    configs = _pool_configs(args, args.pool_dir)
    want = {POOL_A: args.a_seeds, POOL_B: args.b_seeds}
    per_round = {POOL_A: args.per_round[0], POOL_B: args.per_round[1]}
    t0 = time.monotonic()
    while True:
        done = _seeds_done(args.track)
        todo = [name for name in (POOL_A, POOL_B) if done[name] < want[name]]
        print(
            f"[pool] seeds so far: A {done[POOL_A]}/{want[POOL_A]}, B {done[POOL_B]}/{want[POOL_B]} "
            f"({time.monotonic() - t0:.0f} s)",
            flush=True,
        )
        if not todo:
            return
        for name in todo:
            n = min(per_round[name], want[name] - done[name])
            if n <= 0:
                continue
            argv = [
                sys.executable,
                str(REPO / "run.py"),
                "--track",
                args.track,
                "--config",
                str(configs[name]),
            ]
            argv += ["--seeds", str(n), "--all-seeds", "--budget", f"{args.budget:g}", "--new-context"]
            argv += ["--description", name]
            with (args.pool_dir / "collect.log").open("a") as log:
                proc = subprocess.run(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
            if proc.returncode != 0:
                raise SystemExit(
                    f"a {name} trial failed (exit {proc.returncode}): see {args.pool_dir}/collect.log"
                )


class Pool:
    """The seeds of one config: each seed's eval rows, from the trials the ledger's rows name."""

    def __init__(self, rows: list[Any], seeds: list[list[dict]] | None = None) -> None:
        """`rows`: the pool's ledger rows (LedgerRow), or a pool file's header row (its context's cells)."""
        from autorl.io import paths
        from autorl.record.ledger import reference_rows
        from autorl.record.row import LedgerRow

        first = rows[0]
        self.ledger_row = first if isinstance(first, LedgerRow) else LedgerRow.from_json(first)
        self.seeds: list[list[dict]] = seeds if seeds is not None else []
        for row in rows if seeds is None else []:
            by_seed: dict[object, list[dict]] = {}
            for r in reference_rows(row, paths.runs_dir()):  # checked against the row's eval_rows_hash
                by_seed.setdefault(r["seed"], []).append(r)
            self.seeds += list(by_seed.values())

    def draw(self, idx: np.ndarray, offset: int) -> list[list[dict]]:
        """The seeds at `idx`, each relabelled (offset + position): a seed drawn twice stays two seeds."""
        return [[{**r, "seed": offset + k} for r in self.seeds[i]] for k, i in enumerate(idx)]

    def resampled(self, rng: np.random.Generator) -> Pool:
        """A bootstrap copy: as many seeds, drawn with replacement."""
        return Pool(
            [self.ledger_row], [self.seeds[i] for i in rng.integers(0, len(self.seeds), len(self.seeds))]
        )


def reference_noise(ref_rows: list[dict], row: Any, prior: float) -> Any:
    """The noise floor of a ledger holding the reference trial alone: `row` its ledger row (a LedgerRow: the
    pool's), its seed scores those of `ref_rows`."""
    import dataclasses

    from autorl.record import stats
    from autorl.record.context import ResearchContext

    ledger_row = dataclasses.replace(row, seed_scores=stats.seed_scores(ref_rows))
    return stats.noise_floor([ledger_row], ResearchContext.of(ledger_row), prior_sd=prior)


def decide(ref: list[list[dict]], cand: list[list[dict]], parallel: int, pool: Pool, prior: float) -> dict:
    """One pair decided as run.py decides it: the reference trial (all its seeds, the ledger's only trial of
    the context, so the noise floor's only repeats) against the candidate's seeds, wave by wave
    (simulate_decisions.decide_rule: stats.early_decision after each wave, stats.sequential_verdict), and
    under the rule before 2026-11-25 on the same seeds."""
    from autorl.record import stats

    ref_rows = [r for s in ref for r in s]
    noise = reference_noise(ref_rows, pool.ledger_row, prior)
    n = len(cand)

    @functools.cache
    def compare_at(look: int) -> stats.Comparison:
        return stats.compare([r for s in cand[: look * parallel] for r in s], ref_rows, noise=noise)

    looks = stats.looks(n, n, parallel)[1]
    verdict, look = decide_rule(compare_at, looks)
    before, look_before = decide_before(compare_at, looks)
    c = compare_at(look)
    return {
        "verdict": verdict,
        "delta": c.delta,
        "p": c.p_value,
        "seeds": min(n, look * parallel),
        "before": before,
        "seeds_before": min(n, look_before * parallel),
    }


def _rate(k: int, n: int) -> str:
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(0.95, method="exact") if n else None
    return f"{k}/{n} = {k / n:.1%} (95% exact {ci.low:.1%}..{ci.high:.1%})" if ci else "-"


def pairs(a: Pool, b: Pool | None, n: int, count: int, parallel: int, prior: float, rng) -> list[dict]:
    """`count` pairs decided: the reference n seeds of A, the candidate n other seeds of A (b None) or B's."""
    out = []
    for _ in range(count):
        perm = rng.permutation(len(a.seeds))
        cand = a.draw(perm[n : 2 * n], 1000) if b is None else b.draw(rng.permutation(len(b.seeds))[:n], 1000)
        out.append(decide(a.draw(perm[:n], 0), cand, parallel, a, prior))
    return out


CONTEXT_KEYS = ("track", "eval_hash", "harness_hash", "budget", "config_hash", "status")


def export(args: argparse.Namespace) -> None:
    """The pools as one gzipped JSON-lines file: a header line per pool (its context), then one line per
    eval row (the completion dropped): what `analyze --pool-file` reads, so a study's figures can be
    recomputed from a committed file."""
    from autorl.record.row import format_cell

    pools = load_pools(args.track, args.a_run)
    with gzip.open(args.out, "wt", encoding="utf-8") as f:
        for name, pool in pools.items():
            cells = {k: format_cell(k, getattr(pool.ledger_row, k)) for k in CONTEXT_KEYS}
            f.write(json.dumps({"pool": name, "row": cells}) + "\n")
            for k, seed in enumerate(pool.seeds):
                for r in seed:
                    keep = {c: r[c] for c in ("env", "example_id", "sample", "score")}
                    f.write(json.dumps({"pool": name, "seed": k, **keep}) + "\n")
    print(f"[pool] wrote {args.out}: " + ", ".join(f"{n} {len(p.seeds)} seeds" for n, p in pools.items()))


def read_pool_file(path: Path) -> dict[str, Pool]:
    rows: dict[str, dict] = {}
    seeds: dict[str, dict[int, list[dict]]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if "row" in r:
                rows[r["pool"]] = r["row"]
            else:
                seeds.setdefault(r.pop("pool"), {}).setdefault(r["seed"], []).append(r)
    return {name: Pool([rows[name]], list(seeds[name].values())) for name in rows}


def load_pools(track: str, a_runs: list[str]) -> dict[str, Pool]:
    from autorl.record.ledger import Ledger

    rows = [r for r in Ledger(_root() / "results.tsv").rows() if r.track == track and r.status == "ok"]
    pools = {}
    for name in (POOL_A, POOL_B):
        mine = [r for r in rows if r.description == name or (name == POOL_A and r.run_id in a_runs)]
        if len({r.config_hash for r in mine}) > 1:
            raise SystemExit(f"{name}: trials of more than one config")
        if mine:
            pools[name] = Pool(mine)
    if POOL_A not in pools:
        raise SystemExit("no pool A trials in this ledger: run collect first")
    return pools


def analyze(args: argparse.Namespace) -> None:
    from autorl.engine.track import get_track

    pools = read_pool_file(args.pool_file) if args.pool_file else load_pools(args.track, args.a_run)
    track = get_track(args.track)
    n, prior = args.seeds or track.default_seeds, track.seed_sd_prior
    a, b = pools[POOL_A], pools.get(POOL_B)
    sizes = f"pool A {len(a.seeds)} seeds" + (f", pool B {len(b.seeds)} seeds" if b else "")
    looks = -(-n // args.parallel)
    print(
        f"[pool] {args.track}: {sizes}; {n} seeds a side, {args.parallel} at a time ({looks} looks)",
        flush=True,
    )
    if len(a.seeds) < 2 * n:
        raise SystemExit(f"pool A has {len(a.seeds)} seeds: an A/A pair needs {2 * n}")
    rng = np.random.default_rng(args.rng)
    report: dict = {
        "track": args.track,
        "pool_a": len(a.seeds),
        "pool_b": len(b.seeds) if b else 0,
        "seeds": n,
        "parallel": args.parallel,
        "pairs": args.pairs,
        "kinds": {},
    }
    kinds = [("A/A", None)] + ([("A/B", b)] if b else [])
    for kind, other in [k for k in kinds if args.only in (None, k[0])]:
        t0 = time.monotonic()
        results = pairs(a, other, n, args.pairs, args.parallel, prior, rng)
        figures = {}
        for rule, seeds_key in (("verdict", "seeds"), ("before", "seeds_before")):
            counts = {v: sum(r[rule] == v for r in results) for v in ("improved", "worse", "inconclusive")}
            figures[rule] = {**counts, "mean_seeds": float(np.mean([r[seeds_key] for r in results]))}
            name = "the rule" if rule == "verdict" else "the rule before 2026-11-25"
            print(
                f"{kind}, {name}: improved {_rate(counts['improved'], len(results))}; worse "
                f"{_rate(counts['worse'], len(results))}; mean candidate seeds "
                f"{figures[rule]['mean_seeds']:.2f} ({time.monotonic() - t0:.0f} s)",
                flush=True,
            )
        if args.pool_boot:
            figures["pool_boot"] = pool_bootstrap(a, other, n, args, prior, rng)
            for verdict, (lo, hi) in figures["pool_boot"].items():
                print(
                    f"{kind}: {verdict} rate, 90% interval over {args.pool_boot} pools resampled: "
                    f"{lo:.1%}..{hi:.1%}",
                    flush=True,
                )
        report["kinds"][kind] = figures
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


def pool_bootstrap(a: Pool, b: Pool | None, n: int, args: argparse.Namespace, prior: float, rng) -> dict:
    """The rates' spread over pools resampled with replacement (both pools): what drawing more pairs from
    this one pool cannot remove. 5%..95% percentiles of the rule's `improved` and `worse` rates."""
    rates: dict[str, list[float]] = {"improved": [], "worse": []}
    per = max(1, args.pairs // 10)
    for _ in range(args.pool_boot):
        results = pairs(a.resampled(rng), b.resampled(rng) if b else None, n, per, args.parallel, prior, rng)
        for verdict in rates:
            rates[verdict].append(sum(r["verdict"] == verdict for r in results) / per)
    return {v: tuple(float(q) for q in np.quantile(x, [0.05, 0.95])) for v, x in rates.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="train the pools' seeds through run.py (resumable)")
    c.add_argument("--track", choices=("llm", "classic"), default="llm")
    c.add_argument("--config", type=Path, default=None, help="config A (default: the track's shipped one)")
    c.add_argument("--b-set", action="append", default=[], metavar="KEY=VALUE", help="B = A with this change")
    c.add_argument("--budget", type=float, required=True, help="training seconds per seed")
    c.add_argument("--a-seeds", type=int, required=True)
    c.add_argument("--b-seeds", type=int, default=0)
    c.add_argument("--per-round", type=int, nargs=2, default=(2, 1), metavar=("A", "B"))
    c.add_argument("--pool-dir", type=Path, default=None, help="where a.toml, b.toml and collect.log go")
    an = sub.add_parser("analyze", help="decide disjoint resampled pairs with the runner's code")
    an.add_argument("--track", choices=("llm", "classic"), default="llm")
    an.add_argument("--pairs", type=int, default=2000, help="pairs drawn per kind")
    an.add_argument("--seeds", type=int, default=None, help="seeds a side (default: the track's)")
    an.add_argument("--parallel", type=int, required=True, help="seeds at once (this machine's slots)")
    an.add_argument("--a-run", action="append", default=[], help="also count this run's seeds in pool A")
    an.add_argument("--pool-boot", type=int, default=0, metavar="B", help="also resample the pools B times")
    an.add_argument("--pool-file", type=Path, default=None, help="the pools from `export` (not the ledger)")
    an.add_argument("--only", choices=("A/A", "A/B"), default=None, help="one kind only")
    an.add_argument("--rng", type=int, default=0)
    an.add_argument("--json", type=Path, default=None)
    ex = sub.add_parser(
        "export", help="write the pools' eval rows to one gzipped file (for analyze --pool-file)"
    )
    ex.add_argument("--track", choices=("llm", "classic"), default="llm")
    ex.add_argument("--a-run", action="append", default=[], help="also count this run's seeds in pool A")
    ex.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    if args.command == "analyze":
        analyze(args)
    elif args.command == "export":
        export(args)
    elif args.command == "collect":
        if args.config is None:
            args.config = REPO / ("train.toml" if args.track == "llm" else "classic.toml")
        args.pool_dir = (args.pool_dir or _root() / ".autorl" / f"pool-{args.track}").resolve()
        os.environ.setdefault("AUTORL_ROOT", str(_root()))
        collect(args)


if __name__ == "__main__":
    main()
