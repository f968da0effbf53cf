"""A trial, told by `run_trial` from the validated setup to its one ledger row: refuse before training, plan,
train the seeds in waves with a look after each, conclude, record. Whatever fails, a trial that trained
leaves a row. What differs between the tracks is asked of the track; a seed is the engine's unit of work.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import json
import os
import shutil
import signal
import threading
import time
import traceback
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autorl.engine import warm
from autorl.engine.console import (
    EXIT_CRASH,
    EXIT_OK,
    EXIT_SIGNAL,
    Signals,
    invalid,
    print_summary,
    report_seed,
    say,
)
from autorl.engine.process import Stop
from autorl.engine.seed import Judge, SeedResult
from autorl.engine.track import Track
from autorl.engine.trial_types import Reference, Setup, Trained, TrialRequest
from autorl.io import atomic, paths
from autorl.io.harness import commit_short, harness_hash, uncommitted
from autorl.io.jsonl import eval_rows_problem, read_jsonl
from autorl.io.tomlcheck import ConfigError
from autorl.record import claims
from autorl.record.context import ResearchContext, baseline, is_quick
from autorl.record.row import AGENT_VAR, LedgerRow

if TYPE_CHECKING:
    from autorl.engine.ray_pool import Cluster
    from autorl.engine.result import TrialIdentity, TrialResult
    from autorl.engine.slots import Plan
    from autorl.record.ledger import Ledger


def run_trial(setup: Setup) -> int:
    """The trial: 0 when it recorded an ok row, 1 a crash, 2 a refusal (nothing run or recorded), 128 + the
    signal when a signal stopped it (its row says `interrupted`; no row when no seed had started)."""
    from autorl.engine.ray_pool import cluster_for
    from autorl.engine.slots import plan
    from autorl.record.ledger import Ledger, LedgerError

    stop, t0, asked = Stop(), time.monotonic(), setup.request
    with Signals(stop):
        ledger = Ledger(paths.results_file())
        context = ResearchContext(
            setup.track.name,
            setup.track.eval_hash(setup.cfg),
            harness_hash(setup.root),
            asked.budget.budget_s,
        )
        the_plan = plan(setup.backend, setup.cfg, asked.seeds, asked.parallel, asked.ray)
        try:  # 1. refuse before training: the reference unusable, a cluster unfit (bad input)
            ref = with_abort(read_reference(ledger, setup.track, context, quick=asked.quick), setup)
            cluster = cluster_for(asked.ray, asked.ray_start_timeout, the_plan, context.harness_hash, stop)
        except (LedgerError, ConfigError) as exc:
            return invalid(str(exc))
        if why := claims.already_ran(ref.ledger_rows, context, setup.cfg.config_hash, asked.rerun):
            return invalid(why)
        ctx = new_identity(setup, context)
        diff = config_diff_vs_baseline(ref.ledger_rows, context, setup.cfg.text)
        try:  # 2. the config claimed while it trains, for every other trial on this ledger
            with claims.held(context, ctx.run_id, ctx.config_hash, ctx.description, diff):
                try:  # 3. the seeds in waves, a look after each
                    trained = train(setup, ctx, the_plan, cluster, ref, stop, diff)
                except ConfigError:
                    raise
                except Exception as exc:  # a fault of the harness during the trial: the row says it
                    traceback.print_exc()
                    trained = Trained(failure=f"{type(exc).__name__}: {exc}")
                if stop and not trained.failure and not trained.started:
                    shutil.rmtree(ctx.run_dir, ignore_errors=True)  # no seed had started: nothing ran
                    say(f"stopped before any seed started: {ctx.run_id} recorded nothing")
                else:
                    # 4. the verdict
                    result = conclude_trial(setup, ctx, the_plan.parallel, ref, trained, stop)
                    result.total_seconds = time.monotonic() - t0
                    record(result, ledger, trained.failure)  # 5. its files and its row
        except (claims.ClaimError, ConfigError) as exc:  # refused at the claim, or by the backend at launch
            shutil.rmtree(ctx.run_dir, ignore_errors=True)
            return invalid(str(exc))
    if stop:
        return EXIT_SIGNAL.get(signal.Signals(stop.signum or signal.SIGINT), 130)
    return EXIT_OK if result.status == "ok" else EXIT_CRASH


def read_reference(ledger: Ledger, track: Track, context: ResearchContext, quick: bool = False) -> Reference:
    """The reference trial, its eval rows and the noise floor, from the ledger as it is now (read again:
    another trial may have appended since the check before prepare); a quick look has no reference. Raises
    LedgerError."""
    from autorl.record import stats
    from autorl.record.context import best_kept
    from autorl.record.ledger import reference_evidence

    rows = ledger.rows()
    best = None if quick else best_kept(rows, context)
    noise = stats.noise_floor(rows, context, prior_sd=track.seed_sd_prior)
    if best is None:
        return Reference(rows, None, [], noise)
    evidence = reference_evidence(best, rows, context, paths.runs_dir())
    return Reference(rows, best, evidence.rows, noise, evidence=evidence)


def abort_off(ref: Reference, setup: Setup) -> str:
    """Why this trial's seeds are never stopped at a rung ("" = they may be)."""
    if ref.row is None:
        return "off: no reference (a baseline is never aborted)"
    if setup.request.all_seeds or setup.request.no_abort:
        return f"off: {'--all-seeds' if setup.request.all_seeds else '--no-abort'}"
    if not setup.backend.scores_rungs:
        return f"off: the {setup.backend_name} backend scores no rungs"
    return ""


def with_abort(ref: Reference, setup: Setup) -> Reference:
    """The reference with the early abort's rule against its rungs, or the reason the abort is off."""
    from autorl.record.rungs import rule_for

    off = abort_off(ref, setup)
    if off:
        return dataclasses.replace(ref, abort_note=off)
    assert ref.row is not None
    run_id = ref.row.run_id
    dirs = [paths.runs_dir() / r for r in (ref.evidence.runs if ref.evidence else (run_id,))]
    rule, why = rule_for(run_id, dirs, setup.track.abort_margin, setup.track.seed_sd_prior)
    if rule is None:
        return dataclasses.replace(ref, abort_note=why)
    bars = ", ".join(
        f"rung {k} ({f:.0%}) below {t.bar:.4f}"
        for k, f in enumerate(setup.track.rungs, 1)
        if (t := rule.threshold(f)) is not None
    )
    note = f"on: a seed stops at {bars} ({rule.margin_sd:g} seed spreads under {run_id}'s mean)"
    return dataclasses.replace(ref, abort=rule, abort_note=note)


def new_identity(setup: Setup, context: ResearchContext) -> TrialIdentity:
    """The trial's identity and its new run directory (runs/<time>-<commit>)."""
    from autorl.engine.result import TrialIdentity

    commit = commit_short(setup.root)
    run_id, run_dir = new_run_dir(commit)
    return TrialIdentity(
        run_id=run_id,
        run_dir=run_dir,
        commit=commit,
        context=context,
        backend=setup.backend_name,
        config_hash=setup.cfg.config_hash,
        description=setup.request.description,
        agent=os.environ.get(AGENT_VAR, ""),
        seeds_planned=setup.request.seeds,
        score_range=setup.track.score_range(setup.cfg),
        uncommitted=setup.config_path.name if uncommitted(setup.root, setup.config_path) else "",
    )


def train(
    setup: Setup,
    ctx: TrialIdentity,
    the_plan: Plan,
    cluster: Cluster | None,
    ref: Reference,
    stop: Stop,
    diff: str,
) -> Trained:
    """The run's files, the base eval, then the seeds in waves (an interim look after each). Raises
    ConfigError when the backend refuses the config at launch."""
    from autorl.engine.cost import trial_estimate
    from autorl.engine.live import LiveView
    from autorl.engine.pool import PoolRun, SeedJob, run_local

    asked, run_dir = setup.request, ctx.run_dir
    seeds, earlier = trial_seeds(ctx, ref.ledger_rows, asked.seeds)
    atomic.write_text(run_dir / "config.toml", setup.cfg.text)
    atomic.write_text(run_dir / "config.diff", diff)
    say(
        f"run {ctx.run_id}: backend {ctx.backend}, seeds {seeds}, budget {asked.budget.budget_s:g} s per seed"
    )
    say(the_plan.describe())
    if note := ctx.uncommitted_note():
        say(f"note: {note}")
    kept = kept_seeds(setup, ctx, earlier, seeds)
    at = {r.index for r in kept}
    todo = [SeedJob(k, seed, run_dir / f"seed-{k}") for k, seed in enumerate(seeds) if k not in at]
    scored = setup.backend.scores_rungs and not asked.quick
    looks = looks_after_waves(asked, ref) and len(todo) > the_plan.parallel  # more than one wave
    may_stop = looks or (scored and ref.abort is not None)  # ... or the early abort at a rung
    training_s = asked.budget.budget_s if setup.track.budget_is_training_time else None
    if estimate := trial_estimate(
        ref.ledger_rows, ctx.context, len(todo), the_plan.parallel, may_stop, training_s
    ):
        say(estimate)
    if scored:
        say(f"early abort {ref.abort_note}")
    cfg = setup.track.with_rungs(setup.cfg, asked.budget.budget_s) if scored else setup.cfg
    if stop:  # it came while connecting to Ray: nothing is started
        return Trained()
    kept_from = earlier.run_id if earlier and kept else ""
    with warm.starters(stop):  # the children fork from processes that imported torch once
        base_rows, base_s = _base_eval(setup, ctx, stop)
        trained = Trained(base_rows, kept, base_eval_seconds=base_s, kept=len(kept), kept_from=kept_from)
        look = functools.partial(interim_look, asked, the_plan, ref)
        if stop or not todo:
            return trained
        if kept and not len(kept) % the_plan.parallel and (why := look(kept)):  # the look before the stop
            trained.stopped_early = why
            return trained
        run = PoolRun(
            backend=setup.backend,
            cfg=cfg,
            jobs=todo,
            spec=asked.budget,
            plan=the_plan,
            stop=stop,
            after_wave=lambda results: look(kept + results),
            report=report_seed,
            judge=Judge(ref.abort, threading.Event()),
            done=len(kept),
        )
        with LiveView(asked.budget.budget_s) as view:
            if cluster is not None:
                from autorl.engine.ray_pool import run_ray

                results, stopped_early = run_ray(cluster, run)
            else:
                results, stopped_early = run_local(run, view)
        trained.results = kept + results
        trained.stopped_early = stopped_early or abort_stop(results, ref)
        return trained


def kept_seeds(
    setup: Setup, ctx: TrialIdentity, earlier: LedgerRow | None, seeds: list[int]
) -> list[SeedResult]:
    """The seeds that finished in `earlier` (this config's stopped trial in this context, whose
    seeds this trial draws: `trial_seeds`) before its stop: kept (`finished_seed`), not trained again. None
    from a trial that was contended (its seeds measured the machine) or ran on another backend."""
    from autorl.engine.seed import finished_seed

    if earlier is None or earlier.contended or earlier.backend != ctx.backend:  # else it was interrupted
        return []
    there = paths.runs_dir() / earlier.run_id
    found = (
        finished_seed(there, k, seed, ctx.run_dir / f"seed-{k}", setup.backend, setup.cfg)
        for k, seed in enumerate(seeds)
    )
    kept = [r for r in found if r is not None]
    if kept:
        told = ", ".join(str(r.seed) for r in kept)
        say(
            f"kept: {len(kept)} of {len(seeds)} seeds ({told}) finished in {earlier.run_id} before its stop: "
            f"not trained again, {len(seeds) - len(kept)} to run"
        )
    return kept


def _base_eval(setup: Setup, ctx: TrialIdentity, stop: Stop) -> tuple[list[dict[str, Any]], float]:
    """The base model's eval rows, cached per (track, backend, model, eval set, harness), [] on failure, and
    the seconds this trial spent on them (0 from the cache)."""
    track = setup.track
    base_key = hashlib.sha256(
        f"{track.name}|{ctx.backend}|{track.base_model_id(setup.cfg)}|{ctx.context.eval_hash}|"
        f"{ctx.context.harness_hash}".encode()
    )
    base_rows, seconds, base_error = base_eval_rows(
        setup.backend, setup.cfg, base_key.hexdigest()[:16], ctx.run_dir, stop
    )
    if base_error and not stop:
        say(f"warning: base model eval failed: {base_error}")
    return base_rows, seconds


def base_eval_rows(
    backend, cfg, cache_key: str, run_dir: Path, stop: Stop
) -> tuple[list[dict[str, Any]], float, str | None]:
    """The untrained model on the same eval: computed once per (model, eval set, harness) and cached; its
    rows, the seconds computing them took (0 from the cache) and the error (None: none).

    The eval writes into this trial's run directory; the cache gets a copy through the atomic writer, so
    two trials filling the same cache entry at once never share a file."""
    from autorl.engine.seed import run_eval

    cache = paths.cache_dir() / f"base-{cache_key}.jsonl"
    if cache.exists() and not eval_rows_problem(cached := read_jsonl(cache)):
        return cached, 0.0, None  # a corrupt cache is computed again
    say("evaluating the untrained base model (once; cached for later trials)")
    cache.parent.mkdir(parents=True, exist_ok=True)
    out = run_dir / "base_eval.jsonl"
    launch = backend.eval_command(cfg, None, out)
    rows, seconds, error = run_eval(launch, out, run_dir / "base_eval.log", stop)
    if error is None and not stop:
        atomic.write_text(cache, "".join(json.dumps(r) + "\n" for r in rows))
    return rows, seconds, error


def abort_stop(results: list[SeedResult], ref: Reference) -> str:
    """The `stopped_early` line when the early abort stopped one of the seeds ("" = none was)."""
    from autorl.record.rungs import abort_text

    for r in sorted(results, key=lambda r: r.index):
        if (rung := r.aborted) is not None and rung.reference is not None and ref.abort is not None:
            why = abort_text(f"seed {r.index + 1}", r.seed, rung, ref.abort.reference_run)
            say(f"early stop: {why}")
            return why
    return ""


def looks_after_waves(asked: TrialRequest, ref: Reference) -> bool:
    """Whether the trial looks at its reference after a wave (`interim_look`): it has one with eval rows,
    and was not asked for --all-seeds."""
    return bool(ref.eval_rows) and not asked.all_seeds


def interim_look(asked: TrialRequest, the_plan: Plan, ref: Reference, done: list[SeedResult]) -> str:
    """After a wave: whether the trial stops adding seeds ("" = go on, else why), against the reference."""
    from autorl.record import stats

    if why := abort_stop(done, ref):
        return why
    if not looks_after_waves(asked, ref) or any(r.status != "ok" for r in done):
        return ""
    assert ref.row is not None  # eval rows come from a reference row
    look, looks = stats.looks(len(done), asked.seeds, the_plan.parallel)
    rows = [r for s in done for r in s.eval_rows]
    interim, decision = stats.interim_look(rows, ref.eval_rows, ref.noise, look, looks)
    say(
        f"interim look {look} of {looks} after {len(done)}/{asked.seeds} seeds: delta "
        f"{interim.delta:+.4f}, p {interim.p_value:.3g}, efficacy boundary "
        f"{stats.efficacy_alpha(look, looks):.2g}: "
        + {None: "continue", "futile": "stop (futile: delta <= 0)"}.get(decision, "stop (below the boundary)")
    )
    if decision is None:
        return ""
    why = f"after {len(done)}/{asked.seeds} seeds: " + (
        f"delta {interim.delta:+.4f} <= 0"
        if decision == "futile"
        else f"delta {interim.delta:+.4f}, p {interim.p_value:.2g} below the efficacy boundary"
    )
    say(f"early stop {why} vs {ref.row.run_id} ({decision}; --all-seeds runs all)")
    return why


def conclude_trial(
    setup: Setup, ctx: TrialIdentity, parallel: int, ref: Reference, trained: Trained, stop: Stop
) -> TrialResult:
    """The statistics, the summary and the row; a fault here still gives a row, with the reason. The
    backend's summary lines describe the seeds evaluated (a seed a stop or a crash cut is in none)."""
    from autorl.engine.result import Judging, conclude

    judging = Judging(parallel, not setup.request.all_seeds, bool(stop), setup.request.quick)
    collected = [s.collected for s in trained.results if s.collected and s.evaluated]
    try:
        result = conclude(
            ctx, trained, ref, judging, lambda rows: setup.backend.summary_extras(setup.cfg, collected, rows)
        )
    except Exception as exc:  # the statistics or a backend's extras failed: still one row, with the reason
        traceback.print_exc()
        trained.failure = trained.failure or f"{type(exc).__name__}: {exc}"
        nothing = dataclasses.replace(ref, row=None, eval_rows=[])
        result = conclude(ctx, Trained(), nothing, Judging(parallel))  # nothing to fail on
    if stop:
        evaluated = sum(1 for s in trained.results if s.evaluated)
        keep = evaluated and "health/contended" not in result.health
        say(
            f"stopped by a signal: {evaluated} seed(s) evaluated; recording the trial as interrupted"
            + ("; the same config run again keeps them and trains the others" if keep else "")
        )
    return result


def harness_seeds(run_id: str, n: int) -> list[int]:
    """Seeds are the harness's: derived from the run id, different every trial, recorded in the ledger."""
    base = int(hashlib.sha256(run_id.encode()).hexdigest()[:8], 16) % 1_000_000
    return [base + k for k in range(n)]


def trial_seeds(ctx: TrialIdentity, rows: list[LedgerRow], n: int) -> tuple[list[int], LedgerRow | None]:
    """The trial's seeds: its own (`harness_seeds`), or, when its config's latest trial in the context
    measured nothing (interrupted or contended: LedgerRow.void), that trial's, so that running it again
    draws the same seeds (stopping a trial that looks bad buys no fresh draw); and that trial (None: own
    seeds)."""
    same = [r for r in ctx.context.rows(rows) if r.config_hash == ctx.config_hash]
    if same and same[-1].void and (first := same[-1].seed_list[:1]) and first[0].isdigit():
        say(f"seeds: {same[-1].run_id}'s (it measured nothing: the same config runs again on its seeds)")
        return [int(first[0]) + k for k in range(n)], same[-1]
    return harness_seeds(ctx.run_id, n), None


def new_run_dir(commit: str) -> tuple[str, Path]:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    runs = paths.runs_dir()
    runs.mkdir(parents=True, exist_ok=True)
    for suffix in ["", *(f"-{i}" for i in range(2, 100))]:
        run_id = f"{stamp}-{commit}{suffix}"
        try:
            (runs / run_id).mkdir()
            return run_id, runs / run_id
        except FileExistsError:
            continue
    raise RuntimeError("could not create a run directory")


def config_diff_vs_baseline(ledger_rows: list[LedgerRow], context: ResearchContext, text: str) -> str:
    """Diff of this trial's config against its context's baseline (record.context.baseline), or, in a new
    context, the track's first trial (its config is what a new budget's baseline starts from)."""
    base = baseline(context.rows(ledger_rows)) or next(
        (r for r in ledger_rows if r.track == context.track and not is_quick(r)), None
    )
    if base is None or not (base_cfg := paths.run_config_file(base.run_id)).exists():
        return ""
    return "".join(
        difflib.unified_diff(
            base_cfg.read_text().splitlines(keepends=True),
            text.splitlines(keepends=True),
            f"baseline ({base.run_id})",
            "this trial",
        )
    )


def record(result, ledger, failure: str = "") -> None:
    """Save the trial's files and its one row, whatever fails: a trial that trained always leaves a row.

    eval.jsonl, result.json and the summary go through the atomic writer; a file that cannot be saved (disk
    full, runs/ gone) is reported, and when eval.jsonl or the trial itself failed (`failure`) the row says
    so: status `crash` with the reason in `error`. results.tsv is appended even when result.json could not
    be written, and when neither could, the row is printed so that it can be recovered by hand.
    """
    from autorl.record.ledger import LedgerError

    run_dir = result.ctx.run_dir
    problems = [failure] if failure else []
    try:
        atomic.write_text(run_dir / "eval.jsonl", result.eval_jsonl())
    except OSError as e:
        problems.append(f"eval.jsonl not saved: {e.strerror or e}")
    if problems:
        result.fail("; ".join(problems))
    row = result.ledger_row()
    row_json = json.dumps(row, indent=2, default=str)
    saved = ""
    try:
        atomic.write_text(run_dir / "result.json", row_json)
        saved = str(run_dir / "result.json")
    except OSError as e:
        say(f"result.json not saved: {e.strerror or e}")
    try:
        ledger.append(row)
    except LedgerError as exc:
        where = (
            f"the row is saved in {saved}; once the ledger is fixed, append it with: uv run autorl ledger "
            f"append {saved}"
            if saved
            else "the row could not be saved either; it follows, save it as result.json and append it "
            "with `uv run autorl ledger append`:\n" + row_json
        )
        say(f"results.tsv NOT updated: {exc}\n  {where}")
    from autorl.record import events, wandb_log  # here: a refusal before training stays light

    events.write_quietly(run_dir, result.ctx.description, say)  # the seeds' curves for TensorBoard
    wandb_log.write_quietly(run_dir, LedgerRow.from_json(row), say)  # and for W&B, when asked
    print_summary(result.summary_lines(), run_dir)
