"""One trial: validate -> (prepare) -> base eval -> seeds under the budget -> statistics -> summary -> ledger

`uv run run.py` calls main(). Nothing heavy is imported before the config is validated, so a bad config
is refused in well under two seconds with no model loaded and no GPU touched. What differs between the
LLM and the classic track is asked of the track (autorl/track.py); a seed is autorl/seed.py's unit of work;
the summary and the ledger row are built by autorl/result.py.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import shutil
import signal
import sys
import threading
import time
import traceback
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from autorl import atomic, paths
from autorl.cliargs import add_flags, from_args
from autorl.harness import commit_short, dirty_harness_files, harness_hash
from autorl.jsonl import eval_rows_problem, read_jsonl
from autorl.process import Stop
from autorl.seed import RunOptions, SeedResult
from autorl.tomlcheck import ConfigError
from autorl.track import Track, get_track

EXIT_OK, EXIT_CRASH, EXIT_INVALID = 0, 1, 2
EXIT_SIGNAL = {signal.SIGINT: 130, signal.SIGTERM: 143}  # 128 + the signal, as a shell reports it


def build_parser() -> argparse.ArgumentParser:
    """run.py's parser: one flag per RunOptions field (autorl.seed), declared there."""
    p = argparse.ArgumentParser(prog="run.py", description="Run one budgeted, validated, recorded trial.")
    add_flags(p, RunOptions)
    return p


def parse_options(argv: list[str] | None) -> RunOptions:
    """run.py's flags, checked (a bad value exits 2 with argparse's usage line)."""
    return from_args(RunOptions, build_parser().parse_args(argv))


def say(msg: str) -> None:
    print(f"[trial] {msg}", flush=True)


def harness_seeds(run_id: str, n: int) -> list[int]:
    """Seeds are the harness's: derived from the run id, different every trial, recorded in the ledger."""
    base = int(hashlib.sha256(run_id.encode()).hexdigest()[:8], 16) % 1_000_000
    return [base + k for k in range(n)]


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


def config_diff_vs_baseline(ledger_rows: list[dict[str, str]], track: str, text: str) -> str:
    """Diff of this trial's config against the first trial of the track (the baseline) in results.tsv."""
    for row in ledger_rows:
        if row.get("track") == track:
            base_cfg = paths.runs_dir() / row["run_id"] / "config.toml"
            if base_cfg.exists():
                return "".join(
                    difflib.unified_diff(
                        base_cfg.read_text().splitlines(keepends=True),
                        text.splitlines(keepends=True),
                        f"baseline ({row['run_id']})",
                        "this trial",
                    )
                )
            break
    return ""


def print_summary(lines: dict[str, str], run_dir: Path | None) -> None:
    block = "---\n" + "".join(f"{k}: {v}\n" for k, v in lines.items())
    sys.stdout.write(block)
    sys.stdout.flush()
    if run_dir is not None:
        try:
            atomic.write_text(run_dir / "summary.txt", block)
        except OSError as e:
            say(f"summary.txt not saved: {e.strerror or e} (the summary above is complete)")


def invalid(message: str) -> int:
    """A refusal: `status: invalid`, always exit 2, nothing run, nothing recorded."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    print_summary({"status": "invalid"}, None)
    return EXIT_INVALID


def resolved_toml(resolved: dict[str, Any]) -> str:
    """The resolved config as TOML, the format train.toml and prime-rl's `rl @ file` use (TOML has no null:
    a None left by a backend is written as prime-rl's "None" string)."""
    import tomlkit

    def no_null(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: no_null(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [no_null(v) for v in value]
        if isinstance(value, Path):
            return str(value)
        return "None" if value is None else value

    return tomlkit.dumps(no_null(resolved))


# --- the trial -------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    opts = parse_options(argv)
    if opts.explain is not None:  # documentation only: nothing validated, run or recorded
        from autorl.configdoc import explain

        return explain(opts.explain, opts.track, paths.repo_root(), opts.config)
    try:
        return _main(opts)
    except KeyboardInterrupt:  # before the trial's own handlers are installed (validation, prepare)
        print("\n[trial] interrupted before training started: nothing recorded", file=sys.stderr, flush=True)
        return EXIT_SIGNAL[signal.SIGINT]


def _main(opts: RunOptions) -> int:
    if problem := paths.root_problem():
        return invalid(problem)
    root = paths.repo_root()
    track = get_track(opts.track)
    config_path = opts.config or root / track.default_config
    opts = replace(opts, config=config_path, seeds=opts.seeds or track.default_seeds)
    if not config_path.exists():
        return invalid(f"config file {config_path} not found")

    from autorl.machine import MachineFileError, load_machine

    try:
        machine = load_machine()
    except MachineFileError as exc:
        return invalid(str(exc))
    backend_name = track.backend_name(opts.backend, machine)

    # 1. Validate before anything heavy.
    prepared_model = machine.model_name if machine and not opts.dry_run else None
    try:
        cfg = track.load_config(config_path, backend_name, prepared_model)
        backend = track.make_backend(backend_name)
        backend.check(cfg)
    except ConfigError as exc:
        return invalid(str(exc))

    if opts.dry_run:
        return dry_run(backend, cfg, backend_name, opts)

    # 2.-3. The committed harness, a ledger and directories a row can be recorded in, the backend found.
    if problem := refusal_before_training(opts, root, backend):
        return invalid(problem)
    if problems := track.data_problems(cfg):
        return invalid("\n".join(problems))

    # 4. Prepare once per machine, and again when the builtin model's recipe changed.
    if reason := track.prepare_reason(machine):
        from autorl.prepare import PrepareError

        say(reason)
        try:
            machine = track.prepare(config_path)
        except PrepareError as exc:  # not a usage error (exit 2): nothing was recorded, exit 1
            print(f"error: prepare failed: {exc}", file=sys.stderr, flush=True)
            print_summary({"status": "crash"}, None)
            return EXIT_CRASH
        if opts.backend == "auto" and machine.backend != backend_name:
            backend_name = machine.backend
            try:
                cfg = track.load_config(config_path, backend_name, machine.model_name)
                backend = track.make_backend(backend_name)
                backend.check(cfg)
                backend.preflight()
            except ConfigError as exc:
                return invalid(str(exc))
            except Exception as exc:
                return invalid(str(exc))
    return run_trial(opts, track, backend, backend_name, cfg, root)


def refusal_before_training(opts: RunOptions, root: Path, backend) -> str | None:
    """Why the trial must not start (exit 2), checked before prepare and training; None when it may.

    The harness must be the committed one; results.tsv readable, its lock usable and writable, runs/ and
    .autorl/ directories it can write (a trial that trains must be able to record its row); the backend
    able to run here (e.g. prime-rl found).
    """
    dirty = dirty_harness_files(root)
    if dirty and not opts.allow_dirty_harness:
        return (
            "the fixed harness differs from the last commit; only train.toml / classic.toml may change "
            "between trials.\n  modified: "
            + "\n  modified: ".join(dirty)
            + "\n(commit or revert these files; "
            "--allow-dirty-harness exists for developing the harness itself)"
        )
    from autorl.ledger import Ledger, LedgerError

    try:
        Ledger(paths.results_file()).check()
    except LedgerError as exc:
        return str(exc)
    for directory in (paths.runs_dir(), paths.state_dir()):
        if problem := paths.writable_dir_problem(directory):
            return problem
    try:
        backend.preflight()
    except Exception as exc:
        return str(exc)
    return None


def dry_run(backend, cfg, backend_name: str, opts: RunOptions) -> int:
    from autorl.slots import plan

    resolved = backend.resolve(cfg, paths.runs_dir() / "dry-run", 0)
    print(f"# backend: {backend_name}; config {cfg.path} is valid (config_hash {cfg.config_hash})")
    print(f"# {plan(backend, cfg, opts).describe()}")
    print(resolved_toml(resolved))
    if text := backend.availability_note():
        print(f"# note: {text}")
    return EXIT_OK


def base_eval_rows(
    backend, cfg, cache_key: str, run_dir: Path, stop: Stop
) -> tuple[list[dict[str, Any]], str | None]:
    """The untrained model on the same eval: computed once per (model, eval set, harness) and cached.

    The eval writes into this trial's run directory; the cache gets a copy through the atomic writer, so
    two trials filling the same cache entry at once never share a file."""
    from autorl.seed import run_eval

    cache = paths.cache_dir() / f"base-{cache_key}.jsonl"
    if cache.exists() and not eval_rows_problem(cached := read_jsonl(cache)):
        return cached, None  # a corrupt cache is computed again
    say("evaluating the untrained base model (once; cached for later trials)")
    cache.parent.mkdir(parents=True, exist_ok=True)
    out = run_dir / "base_eval.jsonl"
    rows, _, error = run_eval(backend.eval_command(cfg, None, out), out, run_dir / "base_eval.log", stop)
    if error is None and not stop:
        atomic.write_text(cache, "".join(json.dumps(r) + "\n" for r in rows))
    return rows, error


class _Signals:
    """SIGINT/SIGTERM during a trial: the first stops it gracefully, a second kills every child at once."""

    def __init__(self, stop: Stop) -> None:
        self.stop = stop
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for sig in EXIT_SIGNAL:
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: object) -> None:
        if not self.stop.request(signum):
            return
        name = signal.Signals(signum).name
        if not self.stop.hard.is_set():
            print(
                f"\n[trial] {name}: stopping (running seeds save their weights; no new seed or eval "
                "starts). Send it again to kill everything now.",
                file=sys.stderr,
                flush=True,
            )
        else:
            print(f"\n[trial] {name} again: killing every process of the trial", file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def run_trial(opts: RunOptions, track: Track, backend, backend_name: str, cfg, root: Path) -> int:
    stop = Stop()
    with _Signals(stop):
        code = _run_trial(opts, track, backend, backend_name, cfg, root, stop)
    if stop:
        return EXIT_SIGNAL.get(stop.signum or signal.SIGINT, 130)
    return code


def _run_trial(
    opts: RunOptions, track: Track, backend, backend_name: str, cfg, root: Path, stop: Stop
) -> int:
    from autorl import stats
    from autorl.ledger import Ledger, LedgerError, best_kept, reference_rows
    from autorl.ray_pool import cluster_for
    from autorl.result import TrialContext, conclude
    from autorl.show import trial_health
    from autorl.slots import plan

    t0 = time.monotonic()
    ledger = Ledger(paths.results_file())
    assert opts.seeds is not None
    h_hash = harness_hash(root)
    eval_hash = track.eval_hash(cfg)
    # The reference (best kept trial of the same eval set, harness and budget), its eval rows checked against
    # the hash its row recorded before anything runs, and the noise floor: known up front so that a
    # multi-seed trial can stop early when the candidate is behind after some of its seeds.
    the_plan = plan(backend, cfg, opts)
    try:
        ledger_rows = ledger.rows()  # checked before prepare (read again: another trial may have appended)
        reference = best_kept(ledger_rows, track.name, eval_hash, h_hash, opts.budget)
        ref_rows = reference_rows(reference, paths.runs_dir()) if reference else []
        # --ray: connected and probed before the run directory (a cluster unfit for the trial is bad input)
        cluster = cluster_for(opts, the_plan, h_hash, stop)
    except (LedgerError, ConfigError) as exc:
        return invalid(str(exc))
    commit = commit_short(root)
    run_id, run_dir = new_run_dir(commit)
    ctx = TrialContext(
        run_id=run_id,
        run_dir=run_dir,
        commit=commit,
        track=track.name,
        backend=backend_name,
        config_hash=cfg.config_hash,
        harness_hash=h_hash,
        eval_hash=eval_hash,
        description=opts.description,
        budget=opts.budget,
        seeds_planned=opts.seeds,
        score_range=track.score_range(cfg),
    )
    # The ledger does not change during the trial: one noise floor serves every interim check and the verdict.
    noise = stats.noise_floor(
        ledger_rows,
        track=track.name,
        eval_hash=eval_hash,
        harness_hash=h_hash,
        prior_sd=track.seed_sd_prior,
        budget=opts.budget,
    )

    failure = ""
    try:
        base_rows, results, stopped_early = _train(
            opts, track, backend, cfg, ctx, the_plan, cluster, ledger_rows, reference, ref_rows, noise, stop
        )
    except ConfigError as exc:
        shutil.rmtree(run_dir, ignore_errors=True)
        return invalid(str(exc))
    except Exception as exc:  # a fault of the harness during the trial: the row says what happened
        traceback.print_exc()
        failure = f"{type(exc).__name__}: {exc}"
        base_rows, results, stopped_early = [], [], ""

    try:
        result = conclude(
            ctx,
            results,
            base_rows,
            reference,
            ref_rows,
            noise,
            stopped_early=stopped_early,
            extras_fn=lambda rows: backend.summary_extras(
                cfg, [s.outcome for s in results if s.outcome], rows
            ),
            parallel=the_plan.parallel,
            interrupted=bool(stop),
        )
    except Exception as exc:  # the statistics or a backend's extras failed: still one row, with the reason
        traceback.print_exc()
        failure = failure or f"{type(exc).__name__}: {exc}"
        result = conclude(ctx, [], [], None, [], noise, parallel=the_plan.parallel)  # nothing to fail on
    result.run_dir_shown = str(run_dir.relative_to(paths.repo_root()))
    try:
        result.health = trial_health(run_dir, result.score, result.base_score)
    except Exception as exc:  # diagnostics only: a fault here never costs the row
        say(f"warning: health flags not computed: {type(exc).__name__}: {exc}")
    if stop:
        evaluated = sum(1 for s in results if s.evaluated)
        say(f"stopped by a signal: {evaluated} seed(s) evaluated; recording the trial as interrupted")
    result.total_seconds = time.monotonic() - t0
    record(result, ledger, failure)
    return EXIT_OK if result.status == "ok" else EXIT_CRASH


def _train(  # the trial's state, passed once
    opts: RunOptions,
    track: Track,
    backend,
    cfg,
    ctx,
    the_plan,
    cluster,
    ledger_rows: list[dict[str, str]],
    reference: dict[str, str] | None,
    ref_rows: list[dict[str, Any]],
    noise,
    stop: Stop,
) -> tuple[list[dict[str, Any]], list[SeedResult], str]:
    """Base eval, then the seeds in waves (early stop after each wave): (base rows, seed results, why
    stopped early). Raises ConfigError when the backend refuses the config at launch."""
    from autorl import stats
    from autorl.live import LiveView
    from autorl.pool import SeedJob, run_local

    run_dir = ctx.run_dir
    seeds = harness_seeds(ctx.run_id, opts.seeds)
    atomic.write_text(run_dir / "config.toml", cfg.text)
    atomic.write_text(run_dir / "config.diff", config_diff_vs_baseline(ledger_rows, track.name, cfg.text))
    say(f"run {ctx.run_id}: backend {ctx.backend}, seeds {seeds}, budget {opts.budget:g} s per seed")
    say(the_plan.describe())

    base_key = hashlib.sha256(
        f"{track.name}|{ctx.backend}|{track.base_model_id(cfg)}|{ctx.eval_hash}|{ctx.harness_hash}".encode()
    )
    base_rows, base_error = base_eval_rows(backend, cfg, base_key.hexdigest()[:16], run_dir, stop)
    if base_error and not stop:
        say(f"warning: base model eval failed: {base_error}")

    def after_wave(done: list[SeedResult]) -> str:
        if not ref_rows or opts.all_seeds or any(r.status != "ok" for r in done):
            return ""
        interim = stats.compare([r for s in done for r in s.eval_rows], ref_rows, noise=noise)
        looks = -(-opts.seeds // the_plan.parallel)  # waves planned; one look after each but the last
        look = -(-len(done) // the_plan.parallel)
        decision = stats.early_decision(interim, look, looks)
        say(
            f"interim look {look}/{looks - 1} after {len(done)}/{opts.seeds} seeds: delta "
            f"{interim.delta:+.4f}, p {interim.p_value:.3g}, efficacy boundary "
            f"{stats.efficacy_alpha(look, looks):.2g}: {'continue' if decision is None else 'stop'}"
        )
        if decision is None:
            return ""
        why = f"after {len(done)}/{opts.seeds} seeds: " + (
            f"delta {interim.delta:+.4f} <= 0"
            if decision == "futile"
            else f"delta {interim.delta:+.4f}, p {interim.p_value:.2g} below the efficacy boundary"
        )
        say(f"early stop {why} vs {reference['run_id']} ({decision}; --all-seeds runs all)")
        return why

    def report(result: SeedResult) -> None:
        for line in result.log:
            say(line)
        if result.error:
            print(result.error, flush=True)

    jobs = [SeedJob(k, seed, run_dir / f"seed-{k}") for k, seed in enumerate(seeds)]
    results: list[SeedResult] = []
    stopped_early = ""
    if not stop:
        with LiveView(opts.budget) as view:
            if cluster is not None:
                from autorl.ray_pool import run_ray

                results, stopped_early = run_ray(
                    cluster,
                    backend,
                    cfg,
                    jobs,
                    opts.budget_spec(),
                    the_plan,
                    stop,
                    after_wave,
                    report,
                    ctx.harness_hash,
                )
            else:
                results, stopped_early = run_local(
                    backend,
                    cfg,
                    jobs,
                    opts.budget_spec(),
                    the_plan.slots,
                    the_plan.parallel,
                    stop,
                    view,
                    after_wave,
                    report,
                )
    return base_rows, results, stopped_early


def record(result, ledger, failure: str = "") -> None:
    """Save the trial's files and its one row, whatever fails: a trial that trained always leaves a row.

    eval.jsonl, result.json and the summary go through the atomic writer; a file that cannot be saved (disk
    full, runs/ gone) is reported, and when eval.jsonl or the trial itself failed (`failure`) the row says
    so: status `crash` with the reason in `error`. results.tsv is appended even when result.json could not
    be written, and when neither could, the row is printed so that it can be recovered by hand.
    """
    from autorl.ledger import LedgerError

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
    print_summary(result.summary_lines(), run_dir)
