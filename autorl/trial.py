"""One trial: validate -> (prepare) -> train under the budget -> fixed eval -> statistics -> summary -> ledger

`uv run run.py` calls main(). Nothing heavy is imported before the config is validated, so a bad config
is refused in well under two seconds with no model loaded and no GPU touched.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import math
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from autorl import paths
from autorl.backend import Launch, TrainOutcome
from autorl.harness import commit_short, dirty_harness_files, harness_hash
from autorl.live import LiveView
from autorl.process import BudgetSpec, ChildResult, run_budgeted
from autorl.tomlcheck import ConfigError

EXIT_OK, EXIT_CRASH, EXIT_INVALID = 0, 1, 2
# LLM: 6 seeds, the fewest that give the keep rule >= 80% power for a +0.05 gain with the early stop
# (scripts/simulate_decisions.py: 86%; 5 seeds give 80%); a candidate behind the reference stops adding
# seeds early (stats.futile), after 2.8 seeds on average when it is no better.
DEFAULT_SEEDS = {"llm": 6, "classic": 5}
DEFAULT_CONFIG = {"llm": "train.toml", "classic": "classic.toml"}
EVAL_CAP_S = 3600.0  # the fixed eval is never budgeted, only capped against a hang
STATUS_RANK = {"ok": 0, "timeout": 1, "crash": 2}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="run.py", description="Run one budgeted, validated, recorded trial.")
    p.add_argument("--config", type=Path, default=None, help="config file (default train.toml; classic.toml)")
    p.add_argument("--track", choices=["llm", "classic"], default="llm", help="llm (default) or classic PPO")
    p.add_argument("--budget", type=float, default=600.0, help="training seconds per seed (default 600)")
    p.add_argument(
        "--seeds", type=int, default=None, help="trainings with harness-chosen seeds (llm 6, classic 5)"
    )
    p.add_argument(
        "--all-seeds",
        action="store_true",
        help="run every seed even when the candidate is behind the reference after some (no early stop)",
    )
    p.add_argument("--description", default="", help="one line recorded in results.tsv")
    p.add_argument("--dry-run", action="store_true", help="validate, print the resolved config, exit")
    p.add_argument(
        "--backend", choices=["auto", "embedded", "prime-rl"], default="auto", help="llm track backend (auto)"
    )
    p.add_argument(
        "--allow-dirty-harness", action="store_true", help="run although harness files are modified"
    )
    p.add_argument("--hang-timeout", type=float, default=300.0, help="seconds without output = hung (300)")
    p.add_argument("--startup-cap", type=float, default=900.0, help="max seconds of start-up before training")
    p.add_argument("--grace", type=float, default=30.0, help="seconds between SIGTERM and SIGKILL (30)")
    return p


@dataclass
class SeedRun:
    seed: int
    dir: Path
    child: ChildResult | None = None
    outcome: TrainOutcome | None = None
    eval_rows: list[dict[str, Any]] = field(default_factory=list)
    eval_seconds: float = 0.0
    status: str = "ok"
    error: str | None = None


def say(msg: str) -> None:
    print(f"[trial] {msg}", flush=True)


def fmt(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "nan"
    return f"{value:.{digits}f}"


# --- loading --------------------------------------------------------------------------------------------


def load_config(track: str, path: Path, backend_name: str | None, prepared_model: str | None):
    if track == "classic":
        from autorl.classic.config import load_classic_config

        return load_classic_config(path)
    from autorl.llm.config import load_train_config

    return load_train_config(path, backend=backend_name, prepared_model=prepared_model)


def make_backend(track: str, name: str):
    if track == "classic":
        from autorl.classic.backend import ClassicBackend

        return ClassicBackend()
    if name == "prime-rl":
        from autorl.llm.primerl.backend import PrimeRLBackend

        return PrimeRLBackend()
    from autorl.llm.embedded import EmbeddedBackend

    return EmbeddedBackend()


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


# --- evaluation ------------------------------------------------------------------------------------------


def read_eval_rows(path: Path, seed: int | None) -> list[dict[str, Any]]:
    rows = []
    if not path.exists():
        return rows
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            if seed is not None:
                row["seed"] = seed
            rows.append(row)
    return rows


def run_eval(launch: Launch, out: Path, log: Path) -> tuple[list[dict[str, Any]], float, str | None]:
    """Run the backend's fixed eval command as a capped child; returns rows, seconds, error."""
    out.unlink(missing_ok=True)
    spec = BudgetSpec(budget_s=math.inf, startup_cap_s=EVAL_CAP_S, hang_s=EVAL_CAP_S, grace_s=10.0)
    started = time.monotonic()
    result = run_budgeted(launch, log, spec)
    seconds = time.monotonic() - started
    if result.status != "ok" or not out.exists():
        tail = "\n".join(result.log_tail[-15:])
        return [], seconds, f"eval failed ({result.reason_text}):\n{tail}"
    return read_eval_rows(out, None), seconds, None


def base_eval_rows(backend, cfg, cache_key: str, log: Path) -> tuple[list[dict[str, Any]], str | None]:
    """The untrained model on the same eval: computed once per (model, eval set, harness) and cached."""
    cache = paths.cache_dir() / f"base-{cache_key}.jsonl"
    if cache.exists():
        return read_eval_rows(cache, None), None
    say("evaluating the untrained base model (once; cached for later trials)")
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    rows, _, error = run_eval(backend.eval_command(cfg, None, tmp), tmp, log)
    if error is None:
        tmp.replace(cache)
    return rows, error


# --- summary ---------------------------------------------------------------------------------------------


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
        (run_dir / "summary.txt").write_text(block)


def invalid(message: str, code: int = EXIT_INVALID) -> int:
    print(f"error: {message}", file=sys.stderr, flush=True)
    print_summary({"status": "invalid"}, None)
    return code


# --- the trial -------------------------------------------------------------------------------------------


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # the runner then stops the training group; nothing of the trial survives


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _stop_on_sigterm)
    root = paths.repo_root()
    track = args.track
    config_path = args.config or root / DEFAULT_CONFIG[track]
    n_seeds = args.seeds if args.seeds is not None else DEFAULT_SEEDS[track]
    if n_seeds < 1 or args.budget <= 0:
        return invalid("--seeds must be >= 1 and --budget > 0")
    if not config_path.exists():
        return invalid(f"config file {config_path} not found")

    from autorl.machine import load_machine

    machine = load_machine() if track == "llm" else None
    if track == "classic":
        backend_name = "classic"
    elif args.backend != "auto":
        backend_name = args.backend
    else:
        backend_name = machine.backend if machine else "embedded"

    # 1. Validate before anything heavy.
    try:
        cfg = load_config(
            track,
            config_path,
            backend_name if track == "llm" else None,
            machine.model_name if machine and not args.dry_run else None,
        )
        backend = make_backend(track, backend_name)
        backend.check(cfg)
    except ConfigError as exc:
        return invalid(str(exc))

    if args.dry_run:
        return dry_run(backend, cfg, backend_name)

    # 2. The harness must be the committed one.
    dirty = dirty_harness_files(root)
    if dirty and not args.allow_dirty_harness:
        return invalid(
            "the fixed harness differs from the last commit; only train.toml / classic.toml may change "
            "between trials.\n  modified: "
            + "\n  modified: ".join(dirty)
            + "\n(commit or revert these files; "
            "--allow-dirty-harness exists for developing the harness itself)"
        )

    # 3. Prepare once per machine (llm track), and again when the builtin model's recipe changed.
    from autorl.prepare import PrepareError, builtin_model_outdated, prepare

    if track == "llm" and (machine is None or builtin_model_outdated(machine)):
        say(
            "no machine file yet: running prepare.py first"
            if machine is None
            else "the builtin base model was built from an older recipe: running prepare.py again"
        )
        try:
            machine = prepare(config_path)
        except PrepareError as exc:
            return invalid(f"prepare failed: {exc}", EXIT_CRASH)
        if args.backend == "auto" and machine.backend != backend_name:
            backend_name = machine.backend
            backend = make_backend(track, backend_name)
            try:
                cfg = load_config(track, config_path, backend_name, machine.model_name)
                backend.check(cfg)
            except ConfigError as exc:
                return invalid(str(exc))

    preflight = getattr(backend, "preflight", None)
    if callable(preflight):
        try:
            preflight()  # e.g. prime-rl not found: a usage problem, reported before any eval or training
        except Exception as exc:
            return invalid(str(exc))
    return run_trial(args, track, backend, backend_name, cfg, n_seeds, root)


def dry_run(backend, cfg, backend_name: str) -> int:
    resolved = backend.resolve(cfg, paths.runs_dir() / "dry-run", 0)
    print(f"# backend: {backend_name}; config {cfg.path} is valid (config_hash {cfg.config_hash})")
    print(resolved_toml(resolved))
    note = getattr(backend, "availability_note", None)
    if callable(note) and (text := note()):
        print(f"# note: {text}")
    return EXIT_OK


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


def run_trial(args, track: str, backend, backend_name: str, cfg, n_seeds: int, root: Path) -> int:
    from autorl import stats
    from autorl.ledger import Ledger, LedgerError

    t0 = time.monotonic()
    commit = commit_short(root)
    h_hash = harness_hash(root)
    run_id, run_dir = new_run_dir(commit)
    seeds = harness_seeds(run_id, n_seeds)
    shutil.copyfile(cfg.path, run_dir / "config.toml")
    ledger = Ledger(paths.results_file())
    try:
        ledger_rows = ledger.rows()
    except LedgerError as exc:
        say(f"warning: {exc}")
        ledger_rows = []
    diff = config_diff_vs_baseline(ledger_rows, track, cfg.text)
    (run_dir / "config.diff").write_text(diff)
    say(f"run {run_id}: backend {backend_name}, seeds {seeds}, budget {args.budget:g} s per seed")

    spec = BudgetSpec(
        budget_s=args.budget, startup_cap_s=args.startup_cap, hang_s=args.hang_timeout, grace_s=args.grace
    )
    eval_hash = backend_eval_hash(track, cfg)
    base_key = hashlib.sha256(
        f"{track}|{backend_name}|{base_model_id(track, cfg)}|{eval_hash}|{h_hash}".encode()
    )
    base_rows, base_error = base_eval_rows(backend, cfg, base_key.hexdigest()[:16], run_dir / "base_eval.log")
    if base_error:
        say(f"warning: base model eval failed: {base_error}")

    # The reference (best kept trial of the same eval set and harness) and the noise floor, known up front so
    # that a multi-seed trial can stop early when the candidate is behind after some of its seeds.
    reference = ledger.best_kept(track, eval_hash, h_hash) if ledger_rows else None
    ref_rows = (
        read_eval_rows(paths.runs_dir() / reference["run_id"] / "eval.jsonl", None) if reference else []
    )
    ref_score = float(reference["eval_score"]) if reference and reference.get("eval_score") else None

    def noise_with(prior_score: float | None) -> stats.NoiseFloor:
        return stats.noise_floor(
            ledger_rows,
            track=track,
            eval_hash=eval_hash,
            harness_hash=h_hash,
            prior_sd=stats.default_seed_sd(track, prior_score),
        )

    # The ledger does not change during the trial: one noise floor serves the interim checks and the verdict
    # (without a reference there is no comparison, and the prior is scaled by the trial's own score below).
    noise = noise_with(ref_score)

    runs: list[SeedRun] = []
    stopped_early = ""
    for k, seed in enumerate(seeds):
        if k > 0 and ref_rows and not args.all_seeds and all(r.status == "ok" for r in runs):
            pooled = [r for s in runs for r in s.eval_rows]
            interim = stats.compare(pooled, ref_rows, noise=noise)
            if stats.futile(interim):
                stopped_early = f"after {k}/{n_seeds} seeds: delta {interim.delta:+.4f} <= 0"
                say(f"early stop {stopped_early} vs {reference['run_id']} (futility; --all-seeds runs all)")
                break
        seed_run = SeedRun(seed=seed, dir=run_dir / f"seed-{k}")
        seed_run.dir.mkdir()
        runs.append(seed_run)
        (seed_run.dir / "resolved.json").write_text(
            json.dumps(backend.resolve(cfg, seed_run.dir, seed), indent=2, default=str)
        )
        try:
            launch = backend.launch(cfg, seed_run.dir, seed)
        except ConfigError as exc:
            shutil.rmtree(run_dir, ignore_errors=True)
            return invalid(str(exc))
        view = LiveView(args.budget, label=f"seed {k + 1}/{n_seeds}")
        with view:
            seed_run.child = run_budgeted(launch, seed_run.dir / "run.log", spec, on_event=view.update)
        seed_run.status = seed_run.child.status
        child = seed_run.child
        say(f"seed {seed}: {child.reason_text}, {child.training_seconds:.0f} s trained, {child.steps} steps")
        seed_run.outcome = backend.collect(cfg, seed_run.dir)
        for note in seed_run.outcome.notes:
            say(note)
        if seed_run.status == "crash":
            seed_run.error = crash_report(seed_run)
            print(seed_run.error, flush=True)
        if seed_run.outcome.weights_dir is None:
            if seed_run.status == "ok":
                seed_run.status = "crash"
            no_weights = "no weights were saved: nothing to evaluate"
            seed_run.error = f"{seed_run.error.rstrip()}\n{no_weights}" if seed_run.error else no_weights
            say(seed_run.error)
            continue
        say(f"evaluating {seed_run.outcome.weights_dir}")
        out = seed_run.dir / "eval.jsonl"
        rows, seed_run.eval_seconds, error = run_eval(
            backend.eval_command(cfg, seed_run.outcome.weights_dir, out), out, seed_run.dir / "eval.log"
        )
        if error:
            seed_run.status, seed_run.error = "crash", error
            print(error, flush=True)
        for row in rows:
            row["seed"] = seed
        seed_run.eval_rows = rows

    # Pool seeds, then statistics against the best kept trial of the same eval set and harness.
    rows = [r for s in runs for r in s.eval_rows]
    with open(run_dir / "eval.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    status = max((s.status for s in runs), key=STATUS_RANK.__getitem__)
    lines: dict[str, str] = {}
    score = stats.eval_score(rows) if rows else None
    lines["eval_score"] = fmt(score)
    if ref_score is None:
        noise = noise_with(score)
    # One seed: widen the interval by the seed-to-seed spread, which a bootstrap over examples cannot see.
    ci = (
        stats.confidence_interval(rows, seed_sd=noise.sd if len(runs) == 1 else None)
        if rows
        else (None, None)
    )
    lines["eval_ci"] = f"{fmt(ci[0], 3)} {fmt(ci[1], 3)}"
    env_scores = stats.env_scores(rows) if rows else {}
    for env, value in env_scores.items():
        lines[f"eval/{env}"] = fmt(value)
    base_score = stats.eval_score(base_rows) if base_rows else None
    lines["base_score"] = fmt(base_score)

    comparison = None
    if reference is not None and rows and status == "ok" and ref_rows:
        comparison = stats.compare(rows, ref_rows, noise=noise)
    if comparison is not None:
        lines["reference"] = reference["run_id"]
        lines["delta"] = f"{comparison.delta:+.4f}"
        lines["p_value"] = fmt(comparison.p_value)
        lines["verdict"] = comparison.verdict
    else:
        lines["delta"] = "nan"
        lines["p_value"] = "nan"
        lines["verdict"] = "baseline" if reference is None and status == "ok" else "n/a"

    done = [s for s in runs if s.child is not None]
    training_s = sum(s.child.training_seconds for s in done)
    startup_s = sum(s.child.startup_seconds for s in done)
    eval_s = sum(s.eval_seconds for s in runs)
    steps = sum(max(s.child.steps, s.outcome.steps if s.outcome else 0) for s in done)
    peaks = [max(s.child.peak_rss_gb, (s.outcome.peak_memory_gb or 0.0) if s.outcome else 0.0) for s in done]
    lines["training_seconds"] = f"{training_s:.1f}"
    lines["startup_seconds"] = f"{startup_s:.1f}"
    lines["eval_seconds"] = f"{eval_s:.1f}"
    lines["steps"] = str(steps)
    lines["peak_memory_gb"] = f"{max(peaks, default=0.0):.2f}"
    lines["seeds"] = ",".join(str(s.seed) for s in runs)
    if stopped_early:
        lines["stopped_early"] = stopped_early
    extras: dict[str, str] = {}
    if hasattr(backend, "summary_extras") and rows:
        extras = backend.summary_extras(cfg, [s.outcome for s in runs if s.outcome], rows)
        lines.update(extras)
    lines["backend"] = backend_name
    lines["status"] = status
    lines["run_dir"] = str(run_dir.relative_to(paths.repo_root()))
    lines["total_seconds"] = f"{time.monotonic() - t0:.1f}"

    row = {
        "timestamp": datetime.now().isoformat(timespec="seconds"),
        "run_id": run_id,
        "commit": commit,
        "track": track,
        "backend": backend_name,
        "eval_score": score,
        "eval_ci_low": ci[0],
        "eval_ci_high": ci[1],
        "base_score": base_score,
        "env_scores": env_scores,
        "delta": comparison.delta if comparison else None,
        "p_value": comparison.p_value if comparison else None,
        "verdict": lines["verdict"],
        "reference_run": reference["run_id"] if comparison else "",
        "training_seconds": round(training_s, 1),
        "startup_seconds": round(startup_s, 1),
        "eval_seconds": round(eval_s, 1),
        "peak_memory_gb": round(max(peaks, default=0.0), 3),
        "steps": steps,
        "seeds": lines["seeds"],
        "seed_scores": stats.seed_scores(rows) if rows else None,
        "status": status,
        "decision": "pending",
        "config_hash": cfg.config_hash,
        "harness_hash": h_hash,
        "eval_hash": eval_hash,
        "description": args.description,
        "lesson": "",
        "extras": extras,
    }
    (run_dir / "result.json").write_text(json.dumps(row, indent=2, default=str))
    try:
        ledger.append(row)
    except LedgerError as exc:
        say(f"results.tsv NOT updated: {exc}\n  the row is saved in {run_dir / 'result.json'}")
    print_summary(lines, run_dir)
    return EXIT_OK if status == "ok" else EXIT_CRASH


def base_model_id(track: str, cfg) -> str:
    """What the untrained starting point is: the model for LLMs, a random policy on the env for classic."""
    if track == "classic":
        return "random-policy"
    return cfg.model.model.name


def backend_eval_hash(track: str, cfg) -> str:
    if track == "classic":
        from autorl.classic.evaluate import eval_hash

        return eval_hash(cfg)
    from autorl.llm.eval import eval_spec_hash, load_eval_spec

    return eval_spec_hash(load_eval_spec(paths.eval_spec_file()))


def crash_report(seed_run: SeedRun) -> str:
    child, outcome = seed_run.child, seed_run.outcome
    assert child is not None
    who = f" in {outcome.failed_component}" if outcome and outcome.failed_component else ""
    tail = "\n".join(f"    {line}" for line in child.log_tail[-25:])
    report = f"CRASH{who}: {child.reason_text}. Last lines of {seed_run.dir / 'run.log'}:\n{tail}"
    return report
