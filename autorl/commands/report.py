"""`autorl report`: progress.png and a markdown table of the kept trials with their config changes.

The plot shows the trials comparable with the latest one (same track, eval set and harness), in ledger
order: every trial's eval_score with its 95% CI, kept trials highlighted and labelled with their description,
the running best kept score as a step line, the untrained base model's score as a dashed line, crashes and
timeouts marked along the bottom (interrupted trials apart); integer trial ticks. Config changes are listed
key by key against the baseline (autorl.record.context.baseline), from the run directories' config.toml
(config.diff as a fallback).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from autorl.commands.memory import RunConfig, differences  # noqa: E402
from autorl.commands.status import (  # noqa: E402
    chance_line,
    context_row,
    cut,
    fidelity_line,
    hidden_hint,
    latest_fidelity,
    multiplicity,
)
from autorl.engine.track import get_track, track_names  # noqa: E402
from autorl.io import atomic, paths  # noqa: E402
from autorl.record import context as research  # noqa: E402
from autorl.record.context import ResearchContext  # noqa: E402
from autorl.record.ledger import Ledger  # noqa: E402
from autorl.record.row import LedgerRow, as_float  # noqa: E402
from autorl.record.sidetables import CONFIRMED, FIDELITY, seeds_a_side  # noqa: E402

LABEL_WIDTH = 40  # a kept trial's description next to its point, cut to this many characters
STOPPED = dict(color="0.5", label="interrupted (not measured)")  # a trial a signal stopped: no failure


def context_rows(rows: Sequence[LedgerRow], track: str | None = None) -> list[LedgerRow]:
    """The trials comparable with the latest one (of `track`): same track, eval set, harness and budget."""
    latest = context_row(rows, track)
    return ResearchContext.of(latest).rows(rows) if latest else []


def plot(rows: Sequence[LedgerRow], out: Path) -> Path:
    """Write the progress plot of `rows` (already filtered to one context) to `out`."""
    fig = figure(rows)
    buffer = io.BytesIO()
    fig.savefig(buffer, format=out.suffix.lstrip(".").lower() or "png")
    plt.close(fig)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_bytes(out, buffer.getvalue())
    return out


def figure(rows: Sequence[LedgerRow]) -> Figure:
    """The progress plot of `rows` (already filtered to one context)."""
    fig, ax = plt.subplots(figsize=(10, 5), dpi=120)
    xs = list(range(1, len(rows) + 1))
    scores = [r.eval_score for r in rows]
    ok = [(x, s, r) for x, s, r in zip(xs, scores, rows, strict=True) if s is not None and r.status == "ok"]
    groups: dict[str, dict[str, Any]] = {
        "keep": dict(color="tab:green", s=70, zorder=4, label="kept"),
        "discard": dict(color="0.6", s=30, zorder=3, label="discarded"),
        "pending": dict(color="tab:blue", s=30, zorder=3, label="pending"),
    }
    for decision, style in groups.items():
        pts = [(x, s, r) for x, s, r in ok if (r.decision or "pending") == decision]
        if not pts:
            continue
        px, py = [p[0] for p in pts], [p[1] for p in pts]
        lo = [p[1] - (p[2].eval_ci_low or p[1]) for p in pts]
        hi = [(p[2].eval_ci_high or p[1]) - p[1] for p in pts]
        ax.errorbar(px, py, yerr=[lo, hi], fmt="none", ecolor=style["color"], alpha=0.6, capsize=2, zorder=2)
        ax.scatter(px, py, **style, edgecolors="black" if decision == "keep" else "none")
    first = research.baseline(rows)
    steps_x, steps_y = running_best(ok, first)
    if steps_x:
        ax.step(
            steps_x + [xs[-1] + 0.5],
            steps_y + [steps_y[-1]],
            where="post",
            color="tab:green",
            lw=1.5,
            label="best kept",
            zorder=1,
        )
    failed = unscored_marks(ax, [(x, r) for x, r in zip(xs, rows, strict=True) if not r.scored], ok)
    # The untrained model on the same eval: what training has to beat at all.
    base = next((b for r in reversed(rows) if (b := r.base_score) is not None), None)
    if base is not None:
        ax.axhline(base, color="tab:purple", ls="--", lw=1, label=f"base model {base:.4g}", zorder=1)
    if rows:
        ax.set_xlim(0.5, len(rows) + 0.5)
    for x, s, r in ok:
        if r.decision == "keep" and r.description:
            _label(ax, x, s, cut(r.description, LABEL_WIDTH))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("trial (ledger order)")
    ax.set_ylabel("eval_score (95% CI)")
    track = rows[-1].track if rows else "?"
    kept = sum(r.decision == "keep" and r is not first for r in rows)  # ideas kept, as status counts them
    ax.set_title(
        f"autorl progress: {len(rows)} trials ({track} track), the baseline and {kept} kept, {failed} failed"
    )
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(loc="best", fontsize=8)  # where it hides the fewest points (marks along the bottom too)
    fig.tight_layout()
    return fig


def _label(ax: Any, x: float, y: float, text: str) -> None:
    """A kept trial's description next to its point, on the side that keeps it inside the axes: left of
    points in the right half, below points in the upper half; on a pale box above the other trials' marks
    and error bars, which would cross the text (they show through)."""
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    right = x > (x0 + x1) / 2
    upper = y > (y0 + y1) / 2
    ax.annotate(
        text,
        (x, y),
        xytext=(-4 if right else 4, -6 if upper else 6),
        textcoords="offset points",
        ha="right" if right else "left",
        va="top" if upper else "bottom",
        fontsize=7,
        color="tab:green",
        zorder=5,
        bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.75},
    )


def config_changes(row: LedgerRow, baseline: LedgerRow | None) -> str:
    """`key: old -> new` for every key that differs from the baseline's config (memory.differences)."""
    track = get_track(row.track) if row.track in track_names() else None
    mine = RunConfig.read(row.run_id, track)
    base = RunConfig.read(baseline.run_id, track) if baseline else None
    if mine is not None and base is not None:
        now, then, keys = differences(mine, base, track)
        changes = [f"{k}: {then.get(k, '-')} -> {now.get(k, '-')}" for k in keys]
        return "; ".join(changes) if changes else "(same as baseline)"
    diff = paths.runs_dir() / row.run_id / "config.diff"
    try:
        lines = diff.read_text().splitlines()
    except OSError:
        return "(no config in the run directory)"
    changed = [ln for ln in lines if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    return "; ".join(ln.strip() for ln in changed) or "(same as baseline)"


def running_best(ok: Sequence[tuple[int, float, LedgerRow]], base: LedgerRow | None) -> tuple[list, list]:
    """The running best kept score, the step line's points: what a trial had to beat, from the baseline on
    (the baseline counts until something is kept; a baseline discarded and run again starts it at its run
    again)."""
    best, steps_x, steps_y = None, [], []
    for x, s, r in ok:
        if r is base or (best is not None and r.decision == "keep"):
            best = s if best is None else max(best, s)
        if best is not None:
            steps_x.append(x)
            steps_y.append(best)
    return steps_x, steps_y


def unscored_marks(ax: Any, unscored: Sequence[tuple[int, LedgerRow]], ok: Sequence[tuple]) -> int:
    """The trials without a score, marked along the bottom: crashes and timeouts in red, interrupted ones
    (never measured) in grey; how many failed (crash or timeout)."""
    y0 = min([r.eval_ci_low if r.eval_ci_low is not None else s for _, s, r in ok], default=0.0)
    y1 = max([r.eval_ci_high if r.eval_ci_high is not None else s for _, s, r in ok], default=1.0)
    ybot = y0 - 0.08 * max(y1 - y0, 1e-3)  # below every interval drawn
    for stopped, style in ((False, dict(color="tab:red", label="crash / timeout")), (True, STOPPED)):
        marks = [x for x, r in unscored if (r.status == "interrupted") == stopped]
        if marks:
            ax.scatter(marks, [ybot] * len(marks), marker="x", s=50, zorder=4, **style)
    return sum(r.status != "interrupted" for _, r in unscored)


def kept_table(rows: Sequence[LedgerRow]) -> str:
    """Markdown table of the kept trials (the baseline row first)."""
    ok = [r for r in rows if r.scored]
    baseline = research.baseline(rows)
    kept = [r for r in ok if r.decision == "keep" and r is not baseline]
    lines = [
        "| trial | run_id | eval_score | 95% CI | delta (vs its reference, pooled) | p | description "
        "| changes vs baseline |",
        "|---|---|---|---|---|---|---|---|",
    ]
    index = {id(r): i + 1 for i, r in enumerate(rows)}
    for r in ([baseline] if baseline else []) + kept:
        ci = f"{r.eval_ci_low or 0:.3f}–{r.eval_ci_high or 0:.3f}"
        delta = r.delta
        p = r.p_value
        changes = "(baseline)" if r is baseline else config_changes(r, baseline)
        cells = [
            str(index[id(r)]),
            r.run_id,
            f"{r.eval_score:.4f}",
            ci if r.eval_ci_low is not None else "-",
            f"{delta:+.4f}" if delta is not None else "-",
            f"{p:.3g}" if p is not None else "-",
            r.description.replace("|", "/"),
            changes.replace("|", "/"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def confirmed_table(rows: Sequence[LedgerRow], confirmed: Sequence[Mapping[str, str]]) -> str:
    """Markdown table: each confirmed trial's eval delta (what the agent saw) next to its test delta."""
    ids = {r.run_id for r in rows}
    mine = [c for c in confirmed if c["run_id"] in ids]
    if not mine:
        return ""
    lines = [
        "| run_id | vs baseline | eval delta (the trials', pooled) | test delta | 90% CI | p | seeds | power "
        "| verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in mine:
        num = {k: as_float(c, k) for k in ("eval_delta", "delta", "ci_low", "ci_high", "p_value")}
        show = {k: f"{v:+.4f}" if v is not None else "-" for k, v in num.items()}
        ci = f"{show['ci_low']}–{show['ci_high']}" if num["ci_low"] is not None else "-"
        p = f"{num['p_value']:.3g}" if num["p_value"] is not None else "-"
        power = f"{v:.2f}" if (v := as_float(c, "power")) is not None else "-"
        cells = [c["run_id"], c["baseline_run"], show["eval_delta"], show["delta"], ci, p]
        cells += [
            str(seeds_a_side(c)),
            power,
            c["verdict"] if c["status"] == "ok" else c["status"],
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(
    out: Path | None = None, md: Path | None = None, ledger: Ledger | None = None, track: str | None = None
) -> int:
    ledger = ledger or Ledger()
    everything = ledger.rows()
    rows = context_rows(everything, track)
    if not rows:
        print(f"no trials{f' on the {track} track' if track else ''} in results.tsv yet: nothing to report")
        return 1
    if hidden := hidden_hint(everything, ResearchContext.of(rows[-1])):
        print(hidden.replace("autorl status --track", "autorl report --track"))
    out = out or paths.repo_root() / "progress.png"
    for target in (out, md):  # both outputs checked before either is written
        if target is not None:
            atomic.check_target(target)
    table = kept_table(rows)
    confirmed_rows = CONFIRMED.read(CONFIRMED.beside(ledger))
    if confirmed := confirmed_table(rows, confirmed_rows):
        table += "\n\nConfirmed on the sealed test split (`autorl confirm`):\n\n" + confirmed
    chance = multiplicity(rows, confirmed_rows, get_track(rows[-1].track).false_keep_rate)
    table += "\n\n" + chance_line(chance)
    context = ResearchContext.of(rows[-1])
    if line := fidelity_line(latest_fidelity(FIDELITY.read(FIDELITY.beside(ledger)), context)):
        table += "\n\n" + line
    plot(rows, out)
    if md is not None:
        atomic.write_text(md, table + "\n")
    print(f"wrote {out}" + (f" and {md}" if md is not None else "") + "\n")
    print(table)
    return 0
