"""`autorl show [RUN]`: why a trial scored what it scored, in about 40 lines, next to its reference.

It renders a run directory's views (autorl/record/runview.py: `SeedView`, `TrialView`, and the health flags
a trial's summary prints too), the trial beside its reference. `--png FILE` draws each seed's learning curve,
smoothed as the text sums it up, next to the reference's.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autorl.engine.track import training_budget
from autorl.io import paths
from autorl.record.rungs import run_rungs
from autorl.record.runview import TREND_KEYS, Curve, SeedView, TrialView, short, smoothed

MAX_LINES = 40  # the text view is cut to this many lines
MAX_SEED_LINES = 8  # seeds shown one a line (the rest are counted)


def _seed_line(s: SeedView) -> str:
    how = s.status + (f" ({s.stop_reason})" if s.stop_reason and s.stop_reason != "exited" else "")
    sps = f", {s.seconds_per_step:.3g} s/step" if s.seconds_per_step else ""
    wait = f", CPU wait {s.cpu_wait_share:.0%}" if s.cpu_wait_share is not None else ""
    parts = [f"seed-{s.index} {s.seed if s.seed is not None else '?'} {how}: {s.steps} steps{sps}{wait}"]
    parts += [f"{c.key} {c.text()}" for c in s.curves]
    if s.zero_advantage is not None:
        parts.append(f"zero-adv {s.zero_advantage:.0%}")
    if s.truncated is not None:
        parts.append(f"truncated {s.truncated:.0%}")
    if s.solved_seconds is not None:
        parts.append(f"solved at {s.solved_seconds:.3g} s / {s.solved_env_steps} env steps")
    elif s.solving:
        parts.append("not solved")
    return "  " + "; ".join(parts)


def _reference_line(ref: TrialView) -> str:
    seeds = ref.seeds
    steps = [s.steps for s in seeds]
    rewards = [s.reward for s in seeds if s.reward is not None]
    text = (
        f"  reference {ref.run_id}: {len(seeds)} seeds, steps {min(steps, default=0)}-{max(steps, default=0)}"
    )
    if rewards:
        mean = Curve(
            rewards[0].key,
            statistics.fmean(c.start for c in rewards),
            statistics.fmean(c.peak for c in rewards),
            round(statistics.fmean(c.peak_step for c in rewards)),
            statistics.fmean(c.end for c in rewards),
            rewards[0].points,
        )
        text += f"; {mean.key} (mean of seeds) {mean.text()}"
    solved = [s for s in seeds if s.solved_seconds is not None]
    if any(s.solving for s in seeds):
        text += f"; solved on {len(solved)}/{len(seeds)} seeds"
    return text


def _rung_line(view: TrialView) -> str:
    """Its rungs' mean scores next to the reference's, and which seeds the early abort stopped."""
    mine = run_rungs(view.run_dir)
    if not mine:
        return ""
    theirs = run_rungs(view.reference.run_dir) if view.reference is not None else {}
    parts = []
    for f in sorted(mine):
        text = f"at {f:.0%} {statistics.fmean(mine[f]):.4f} ({len(mine[f])} seeds)"
        if f in theirs:
            text += f" vs reference {statistics.fmean(theirs[f]):.4f} ({len(theirs[f])})"
        parts.append(text)
    aborted = [f"seed-{s.index}" for s in view.seeds if s.stop_reason == "aborted"]
    return "rungs: " + "; ".join(parts) + (f"; aborted: {', '.join(aborted)}" if aborted else "")


def _trend_line(seeds: Sequence[SeedView]) -> str:
    parts = []
    for key in TREND_KEYS:
        pairs = [s.trends[key] for s in seeds if key in s.trends]
        if pairs:
            first, last = statistics.fmean(p[0] for p in pairs), statistics.fmean(p[1] for p in pairs)
            parts.append(f"{key} {short(first)}→{short(last)}")
    return "trends (first → last tenth of the steps, mean over seeds): " + "; ".join(parts) if parts else ""


MAX_ENV_SEEDS = 6  # per-seed scores an eval env's line lists (the rest are counted)


def _pooled(view: TrialView) -> bool:
    """Whether the trial's delta pooled its reference with the reference config's other trials (the summary's
    `reference_seeds`: "<n> (<run> + <run>...)")."""
    return " + " in str(view.summary.get("reference_seeds", ""))


def _env_lines(view: TrialView) -> list[str]:
    ref = view.reference.env_scores() if view.reference else {}
    # The reference trial's own scores: the delta above pooled its config's other trials when it says so.
    alone = f" {view.reference.run_id} alone" if view.reference and _pooled(view) else ""
    lines = []
    for env, score in view.env_scores().items():
        per_seed = [s.env_scores[env] for s in view.seeds if env in s.env_scores]
        more = f" … {len(per_seed) - MAX_ENV_SEEDS} more" if len(per_seed) > MAX_ENV_SEEDS else ""
        listed = " ".join(f"{v:.3f}" for v in per_seed[:MAX_ENV_SEEDS])
        spread = f" (seeds {listed}{more})" if len(per_seed) > 1 else ""
        vs = f" vs reference{alone} {ref[env]:.4f} ({score - ref[env]:+.4f})" if env in ref else ""
        lines.append(f"  eval/{env}: {score:.4f}{spread}{vs}")
    return lines


def causes(seeds: Sequence[SeedView]) -> list[tuple[str, list[str]]]:
    """Each crash or timeout cause once, with the seeds it ended (seed-<k>), in the order first seen."""
    by_cause: dict[str, list[str]] = {}
    for s in seeds:
        if s.cause:
            by_cause.setdefault(s.cause, []).append(f"seed-{s.index}")
    return list(by_cause.items())


def _head(view: TrialView) -> list[str]:
    r, s = view.row, view.summary
    head = f"run {view.run_id} ({r.track or '?'} track, {r.backend or '?'}): status {r.status}"
    head += f", verdict {r.verdict}, eval_score {short(r.eval_score)}"
    lines = [head]
    ref = r.reference_run
    if ref:
        lines.append(
            f"reference {ref}: delta {s.get('delta', '-')}, p {s.get('p_value', '-')}"
            + (f"; {s['seeds_needed']}" if "seeds_needed" in s else "")
        )
    lines.append(
        f"budget {short(r.budget)} s per seed; {len(view.seeds)} seeds ({r.parallel or '?'} at once); "
        f"base_score {short(r.base_score)}"
        + (f"; stopped early {r.stopped_early}" if r.stopped_early else "")
    )
    if r.description:
        lines.append(f"description: {r.description}")
    if kept := s.get("kept_seeds"):  # seeds of its config's stopped trial, not trained again
        lines.append(f"kept seeds: {kept}, not trained again")
    return lines


def render(view: TrialView) -> str:
    """The bounded text view (at most MAX_LINES lines)."""
    out = _head(view)
    out.append("seeds (curves smoothed: start→peak@step→end):")
    out += [_seed_line(s) for s in view.seeds[:MAX_SEED_LINES]]
    if len(view.seeds) > MAX_SEED_LINES:
        out.append(f"  ... {len(view.seeds) - MAX_SEED_LINES} more seeds (--png draws them all)")
    if view.reference is not None:
        out.append(_reference_line(view.reference))
        if pooled := view.summary.get("reference_seeds"):  # its config's other trials pooled with it
            out.append(f"  the verdict's reference seeds (its config's trials pooled): {pooled}")
    if rung := _rung_line(view):
        out.append(rung)
    if trend := _trend_line(view.seeds):
        out.append(trend)
    out += _env_lines(view)
    if spread := (view.row.extras or {}).get("seed_return_std"):
        out.append(f"spread across seeds: final return sd {spread}")
    out += [f"cause {', '.join(seeds)}: {cause}" for cause, seeds in causes(view.seeds)[:3]]
    flags = view.flags(training_budget(view.row.track, view.row.budget))
    out += [f"health: {f.text}" for f in flags] or ["health: no flag raised"]
    if len(out) > MAX_LINES:
        out = out[: MAX_LINES - 1] + [f"... {len(out) - MAX_LINES + 1} more lines cut"]
    return "\n".join(out)


def draw(ax: Any, view: TrialView) -> None:
    """Each seed's main curve, smoothed as `show`'s text sums it up (runview.smoothed: solid, the trial blue,
    its reference's seeds grey and dashed), over its raw per-step values (faint): a GRPO step's reward is a
    batch mean and swings more than the trend."""
    keys = []
    for trial, style, colour in ((view, "-", "tab:blue"), (view.reference, "--", "tab:gray")):
        for k, s in enumerate(trial.seeds if trial is not None else ()):
            if not s.curves:
                continue
            key = s.curves[0].key
            keys.append(key)
            steps, values = s.series[key]
            ax.plot(steps, values, style, color=colour, alpha=0.2, linewidth=0.6)
            label = f"{'this trial' if trial is view else 'reference'} ({key}, smoothed)" if k == 0 else None
            ax.plot(*smoothed(steps, values), style, color=colour, alpha=0.9, linewidth=1.5, label=label)
    ax.set_xlabel("step")
    ax.set_ylabel(" / ".join(dict.fromkeys(keys)) or "reward")
    ax.set_title(
        f"{view.run_id} vs {view.reference.run_id if view.reference else 'no reference'} "
        "(moving average over a tenth of the steps; faint: each step)",
        fontsize=9,
    )
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def plot(view: TrialView, out: Path) -> Path:
    """`draw` into a PNG at `out`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    draw(ax, view)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def resolve_run(run: str | None) -> Path:
    """A run id (or unique prefix) in results.tsv, a run directory, or None: the latest trial."""
    from autorl.record.ledger import Ledger, LedgerError

    if run is not None and Path(run).is_dir() and (Path(run) / "result.json").is_file():
        return Path(run)
    row = Ledger().find(run)
    run_dir = paths.runs_dir() / row.run_id
    if not run_dir.is_dir():
        raise LedgerError(f"{run_dir} is missing: the trial's run directory was removed")
    return run_dir


def main(run: str | None = None, png: Path | None = None) -> int:
    view = TrialView.load(resolve_run(run))
    print(render(view))
    if png is not None:
        print(f"wrote {plot(view, png)}")
    return 0
