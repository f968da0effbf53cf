"""`autorl status`: a short, bounded view of the research state for the agent (instead of old logs).

At most ~35 lines whatever the ledger size: the best kept trial, the noise floor, counts, the last N trials,
the latest lessons (whole: they are the memory that survives a context reset) and the latest re-marks.
Only trials comparable with the latest one (same track, eval set, harness and budget; `--track` picks the
latest of another track) are summarised, and the view says how to see the others.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

import tomlkit

from autorl.commands.memory import RunConfig, differences, tried, tried_lines
from autorl.engine.cost import aborted, cost_line, expected_cost
from autorl.engine.result import ceiling_note
from autorl.engine.track import get_track, track_names
from autorl.io import inputs, paths
from autorl.io.tomlcheck import flatten
from autorl.record.context import (
    ResearchContext,
    baseline_repeats,
    best_kept,
    config_pool,
    config_repeats,
    is_quick,
    kept_config_to_adopt,
    repeat_command,
    repeat_due,
)
from autorl.record.ledger import Ledger, Mark
from autorl.record.row import AGENT_VAR, LedgerRow, as_float, counted
from autorl.record.sidetables import CONFIRMED, FIDELITY, strongest
from autorl.record.stats import POWER, NoiseFloor, noise_floor

MAX_LAST = 20  # --last is capped so the view stays bounded
TEXT_WIDTH = 60  # descriptions are cut to this many characters (lessons never are)
MAX_LESSONS = 6  # the latest lessons, shown whole
MAX_REMARKS = 3  # the latest changed decisions (autorl mark --reason)
STREAK_WARNING = 5  # trials in a row not kept (since the last keep or diagnosis) before the view warns
DIAGNOSIS = "diagnosis:"  # a lesson that starts so records a diagnosis: the warning's count starts again


def cut(text: str, width: int = TEXT_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _brief(row: LedgerRow) -> dict[str, Any]:
    return {
        "run_id": row.run_id,
        "commit": row.commit,
        "eval_score": row.eval_score,
        "eval_ci": [row.eval_ci_low, row.eval_ci_high],
        "seeds": len(row.seed_list),
        "delta": row.delta,
        "p_value": row.p_value,
        "verdict": row.verdict,
        "status": row.status,
        "aborted": aborted(row),  # the early abort stopped it at a rung: no score of its own
        "health": row.health.split(),  # its summary's health flags (contended: not measured)
        "decision": row.decision,
        "description": row.description,
        "lesson": row.lesson,
        "agent": row.agent,
    }


def context_row(rows: Sequence[LedgerRow], track: str | None = None) -> LedgerRow | None:
    """The row whose context (track, eval set, harness, budget) is shown: the latest (of `track`) that is not
    a quick look (run.py --quick belongs to no context)."""
    mine = (r for r in reversed(rows) if track is None or r.track == track)
    return next((r for r in mine if not is_quick(r)), None)


def hidden_hint(rows: Sequence[LedgerRow], shown: ResearchContext) -> str:
    """How to see the trials of other contexts: `--track T` for other tracks."""
    others = [r for r in rows if not shown.holds(r)]
    if not others:
        return ""
    tracks = sorted({r.track for r in others if r.track != shown.track})
    same_track = sum(r.track == shown.track for r in others)
    parts = [f"{len(others)} trials of other contexts not shown"]
    if tracks:
        parts.append("see them with " + ", ".join(f"`autorl status --track {t}`" for t in tracks))
    if same_track:
        parts.append(
            f"{same_track} of them are {shown.track} trials under another eval set, harness or budget "
            "(`autorl status --json --all` lists every context)"
        )
    return "; ".join(parts)


def contexts(rows: Sequence[LedgerRow]) -> list[dict[str, Any]]:
    """Every context of the ledger with its trial count and latest run (`--all`)."""
    seen: dict[ResearchContext, list[LedgerRow]] = {}
    for r in rows:
        seen.setdefault(ResearchContext.of(r), []).append(r)
    return [{**dataclasses.asdict(c), "trials": len(rs), "latest": rs[-1].run_id} for c, rs in seen.items()]


def multiplicity(
    same: Sequence[LedgerRow], confirmed: Sequence[Mapping[str, str]], false_keep_rate: float
) -> dict[str, Any]:
    """How many of a context's `improved` verdicts chance alone explains: every comparison made (a trial with
    a reference and a verdict, baseline repeats included; a contended one measured nothing) reads `improved`
    with the track's measured false-keep rate even when nothing works, next to the keeps and how many of them
    `autorl confirm` held."""
    compared = [r for r in same if r.verdict in ("improved", "worse", "inconclusive") and not r.void]
    kept = [r for r in same if r.decision == "keep" and r.verdict != "baseline"]
    held = {c["run_id"] for c in confirmed if c["verdict"] == "improved" and c["status"] == "ok"}
    repeats = [r for r in compared if r.run_id in baseline_repeats(same)]  # A/A: no idea, chance by design
    return {
        "comparisons": len(compared),
        "improved": sum(r.verdict == "improved" for r in compared),
        "repeats": len(repeats),
        "repeats_improved": sum(r.verdict == "improved" for r in repeats),
        "false_keep_rate": false_keep_rate,
        "expected_by_chance": len(compared) * false_keep_rate,
        "kept": len(kept),
        "confirmed": sum(r.run_id in held for r in kept),
    }


def chance_line(m: Mapping[str, Any]) -> str:
    repeats, lucky = m.get("repeats", 0), m.get("repeats_improved", 0)
    of_them = f" ({lucky} of them {'a repeat' if lucky == 1 else 'repeats'})" if lucky else ""
    return (
        f"comparisons: {m['comparisons']}"
        + (
            f" ({repeats} {'a repeat' if repeats == 1 else 'repeats'} of the baseline's config, A/A)"
            if repeats
            else ""
        )
        + f", improved {m['improved']}{of_them}; by chance alone ~"
        f"{m['expected_by_chance']:.1f} would read improved (false-keep rate {m['false_keep_rate']:.1%}, "
        f"real A/A seeds); kept {m['kept']}, confirmed on the test split {m['confirmed']}"
    )


def latest_fidelity(fidelity: Sequence[Mapping[str, str]], context: ResearchContext) -> dict[str, Any] | None:
    """The context's latest `autorl fidelity` run: its summary (runs/<id>/fidelity.json) and whether each
    kept config held at the long budget; None when there is none."""
    mine = [
        r
        for r in fidelity
        if (r["track"], r["eval_hash"], r["harness_hash"])
        == (context.track, context.eval_hash, context.harness_hash)
        and as_float(r, "short_budget") == context.budget
    ]
    if not mine:
        return None
    fid = mine[-1]["fidelity_id"]
    summary = inputs.read_json_object(paths.runs_dir() / fid / "fidelity.json") or {}
    kept = {r["run_id"]: r["holds"] for r in mine if r["fidelity_id"] == fid and r["role"] == "kept"}
    return {"fidelity_id": fid, "summary": summary, "kept": kept}


def fidelity_line(f: Mapping[str, Any] | None) -> str | None:
    if f is None:
        return None
    s = f["summary"]
    rho = f"rho {s['spearman_rho']:.2f}" if isinstance(s.get("spearman_rho"), float) else "rho -"
    ci = s.get("rho_ci") or [None, None]
    if None not in ci:
        rho += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    held = sum(v == "holds" for v in f["kept"].values())
    failed = [k for k, v in f["kept"].items() if v == "does not hold"]
    untold = sum(v == "inconclusive" for v in f["kept"].values())
    budget = f"{s['long_budget']:g}" if isinstance(s.get("long_budget"), float | int) else "?"
    out = f"fidelity ({f['fidelity_id']}, {s.get('configs', '?')} configs at {budget} s): {rho}"
    out += f"; keeps that hold at the long budget: {held}/{len(f['kept'])}"
    said = [f"does not hold: {', '.join(failed)}"] if failed else []
    said += [f"{untold} inconclusive: its test could not tell, not a failure"] if untold else []
    # a keep whose config stops itself (max_steps) never trained longer there: its long run is its short one
    same = [k for k in f["kept"] if k in (s.get("no_longer") or {})]
    if same:
        said.append(f"trains no longer at the long budget, its config's own limit: {', '.join(same)}")
    return out + (f" ({'; '.join(said)})" if said else "")


def collect(
    rows: Sequence[LedgerRow],
    last: int = 8,
    track: str | None = None,
    marks: Sequence[Mark] = (),
    confirmed: Sequence[Mapping[str, str]] = (),
    fidelity: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """The status as a dict (what `--json` prints). `confirmed`, `fidelity`: confirmed.tsv's and
    fidelity.tsv's rows."""
    latest = context_row(rows, track)
    if latest is None:
        where = f" on the {track} track" if track else ""
        quick = sum(is_quick(r) for r in rows if track is None or r.track == track)
        looks = (
            f" (only {quick} quick look{'s' * (quick != 1)}, which no trial is compared with)"
            if quick
            else ""
        )
        return {
            "trials": len(rows),
            "message": f"no trials{where} yet{looks}: run the baseline (see program.md, setup)",
        }
    ctx = ResearchContext.of(latest)
    same = ctx.rows(rows)
    best = best_kept(same, ctx)
    the_track = get_track(ctx.track)
    # The noise floor the verdict uses: the track's prior pooled with the ledger's repeats.
    nf = noise_floor(same, ctx, prior_sd=the_track.seed_sd_prior)
    top = the_track.score_range(None)[1]
    # A re-run of the baseline's config measures noise and is discarded by design (program.md): it counts
    # neither as a decided trial nor as a trial not kept; nor does a trial that measured nothing (interrupted
    # or contended: program.md runs it again). The baseline is kept by design: the keep rate is of the ideas
    # tried against it; an idea tried twice (a labelled re-run, a keep run again) is one idea decided.
    aside = baseline_repeats(same) | config_repeats(same) | {r.run_id for r in same if r.void}
    ideas = [r for r in same if r.run_id not in aside and r.verdict != "baseline"]
    decided = [r for r in ideas if r.decision in ("keep", "discard")]
    kept = [r for r in ideas if r.decision == "keep"]
    last_keep = max((i for i, r in enumerate(same) if r.decision == "keep"), default=-1)
    since = sum(r.run_id not in aside for r in same[last_keep + 1 :])
    # Trials in a row (newest first) that ended in crash/timeout or were not kept since the last keep or the
    # last diagnosis (a lesson starting with DIAGNOSIS: program.md's "diagnose, don't tune"): the signal.
    streak = 0
    for r in reversed(same):
        if r.decision == "keep" or r.lesson.lstrip().lower().startswith(DIAGNOSIS):
            break
        streak += r.run_id not in aside
    n_last = max(1, min(last, MAX_LAST))
    run_ids = {r.run_id for r in same}
    return {
        "trials": len(rows),
        "context": {
            "track": ctx.track,
            "eval_hash": ctx.eval_hash,
            "harness_hash": ctx.harness_hash,
            "budget": ctx.budget,
            "budget_note": the_track.budget_note,
            "trials": len(same),
            "other_trials": len(rows) - len(same),
            "hidden": hidden_hint(rows, ctx),
        },
        "best": _brief(best) if best else None,
        "best_pooled": config_pool(same, ctx, best) if best else None,  # [trials, seeds, mean]
        "best_is_kept": bool(best and best.decision == "keep"),
        # its config ran once: its seeds alone are the bar, a lucky draw's (program.md: run its repeat)
        "best_repeat_due": bool(best and best.scored and repeat_due(same, ctx, best)),
        "best_confirms": [
            {k: c[k] for k in ("confirm_id", "budget", "delta", "p_value", "verdict", "power", "seeds")}
            for c in confirmed
            if best and c["run_id"] == best.run_id and c["status"] == "ok"
        ],
        # The verdict's own check: a reference whose interval reaches the top of the range cannot be beaten.
        "ceiling": ceiling_note(best, (None, None), top) if best else "",
        "noise_floor": {
            "sd": nf.sd,
            "measured_sd": nf.measured_sd,
            "df": nf.df,
            "repeated_configs": nf.n_configs,
            "text": nf.describe(),
        },
        "keep_rate": {"kept": len(kept), "decided": len(decided)},
        "chance": multiplicity(same, confirmed, the_track.false_keep_rate),
        "fidelity": latest_fidelity(fidelity, ctx),
        "since_last_keep": since,
        "not_kept_streak": streak,
        "baseline_repeats": sorted(baseline_repeats(same)),
        "crashes": sum(r.status == "crash" for r in same),
        "timeouts": sum(r.status == "timeout" for r in same),
        "pending": [r.run_id for r in same if r.decision == "pending"][-5:],
        "last": [_brief(r) for r in same[-n_last:]],
        "lessons": [
            {"run_id": r.run_id, "decision": r.decision, "lesson": r.lesson} for r in same if r.lesson
        ][-MAX_LESSONS:],
        "remarks": [vars(m) for m in marks if m.is_remark and m.run_id in run_ids][-MAX_REMARKS:],
        # Every key this track's trials changed against their reference, newest first (render shows a few).
        "tried": tried([r for r in rows if r.track == ctx.track], the_track),
        "cost": expected_cost(same, ctx, the_track.default_seeds, confirm_plan(same, best, nf)),
    }


def diff_changes(diff: str) -> list[str]:
    """The `key = value` lines a config diff (config.diff: against the baseline) adds, as dotted keys under
    the table the diff shows them in, comments and blank lines left out; a line TOML cannot read alone is
    given as written."""
    section, out = "", []
    for line in diff.splitlines():
        if line.startswith(("+++", "---", "@@")) or not line:
            continue
        body = line[1:].strip()  # TOML reads a trailing comment itself
        if body.startswith("["):  # a table header, [a.b] or [[a]], perhaps with a comment
            section = body.split("]", 1)[0].strip("[ ") + "."
            continue
        if not line.startswith("+") or not body or body.startswith("#"):
            continue
        try:
            added = flatten(tomllib.loads(body))
        except tomllib.TOMLDecodeError:
            out.append(body)
            continue
        out += [f"{section}{k} = {tomlkit.item(v).as_string()}" for k, v in added.items()]
    return out


def in_flight(track: str | None, reference: str | None = None) -> list[dict[str, Any]]:
    """The trials training now on this ledger (autorl/record/claims.py), of `track` (all: None), each with
    what it changes against `reference` (the best kept trial's run id: what its verdict will compare it
    with), else against the baseline (its claim's diff)."""
    from autorl.record import claims

    out = []
    for c in claims.in_flight():
        if track in (None, c.track):
            against = changes_against(c.run_id, reference, c.track)
            out.append(
                {
                    "run_id": c.run_id,
                    "who": c.who,
                    "started": c.started,
                    "description": c.description,
                    "changes": diff_changes(c.diff) if against is None else against,
                    "against": None if against is None else reference,  # None: the baseline
                }
            )
    return out


def changes_against(run_id: str, reference: str | None, track: str) -> list[str] | None:
    """`key = value` for each key `run_id`'s config (runs/<id>/config.toml, written at its start) sets
    otherwise than `reference`'s; None when either file cannot be read."""
    if reference is None or track not in track_names():
        return None
    the_track = get_track(track)
    mine, theirs = RunConfig.read(run_id, the_track), RunConfig.read(reference, the_track)
    if mine is None or theirs is None:
        return None
    now, _, keys = differences(mine, theirs, the_track)
    return [f"{k} = {tomlkit.item(now[k]).as_string() if k in now else '-'}" for k in keys]


def in_flight_lines(flying: Sequence[Mapping[str, Any]]) -> list[str]:
    if not flying:
        return []
    out = ["in flight (training now on this ledger; never start the same config):"]
    for f in flying:
        changes = "; ".join(f["changes"]) or "the baseline's config"
        changes = f"vs {f['against']}: {changes}" if f["against"] else changes
        out.append(
            f"  {f['run_id']} ({f['who']}, since {f['started']}): {cut(changes, 60)}  "
            + cut(f["description"], 40)
        )
    return out


def onto_best(st: Mapping[str, Any]) -> str | None:
    """When this worktree's config is not the reference's: in a swarm (AUTORL_AGENT set), the best kept
    trial being another agent's (or one no agent made), the command that brings the worktree onto it; else
    (its own reference) what differs, as the first step of the loop expects the reference's config after a
    keep or a revert."""
    best, me = st.get("best"), os.environ.get(AGENT_VAR, "")
    if not best:
        return None
    track = get_track(st["context"]["track"])
    mine = paths.repo_root() / track.default_config
    kept = kept_config_to_adopt(best["run_id"], mine)
    if kept is None:
        return None
    if me and st.get("best_is_kept") and best["agent"] != me:  # another agent's keep, or one made outside
        whose, by = (f"{best['agent']}'s ", "") if best["agent"] else ("", ", kept by no agent")
        return (
            f"the best kept config is {whose}{best['run_id']} ({cut(best['description'], 50)}{by}), "
            f"not your {mine.name}: build on it: cp {kept} {mine.name} && "
            f'git commit -am "onto {best["run_id"]}"'
        )
    theirs, ours = RunConfig.read(best["run_id"], track), RunConfig.of(mine, track)
    if theirs is None or ours is None:
        return None
    now, then, keys = differences(ours, theirs, track)
    if not keys:  # the same config, written otherwise
        return None
    changed = "; ".join(f"{k} = {now.get(k, '-')} here, {then.get(k, '-')} there" for k in keys[:4])
    more = f" (+{len(keys) - 4} more)" if len(keys) > 4 else ""
    return (
        f"note: {mine.name} is not {best['run_id']}'s config ({cut(changed, 90)}{more}): fine for the idea "
        f"you are about to run; after a discard or crash a revert should have brought it back (a lost keep? "
        f"cp {kept} {mine.name})"
    )


def best_lines(st: Mapping[str, Any]) -> list[str]:
    """The reference: its score and interval, whose it is when not this agent's, the ceiling's note."""
    b = st["best"]
    if not b:
        return ["best kept: none (no scored trial kept or standing: the next trial is a new baseline)"]
    what = "best kept" if st["best_is_kept"] else "reference (nothing kept yet: the baseline)"
    ci = b["eval_ci"]
    ci_text = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if None not in ci else ""
    score = f"{b['eval_score']:.4f}" if b["eval_score"] is not None else "-"
    out = [f"{what}: {b['run_id']} eval_score {score}{ci_text}  {cut(b['description'], 50)}"]
    if pool := st.get("best_pooled"):  # its config's repeats: the bar the next delta is measured against
        out.append(
            f"  its config's {pool[0]} trials pooled ({pool[1]} seeds): {pool[2]:.4f}, the bar of a delta"
        )
    if st.get("best_repeat_due"):
        out.append(
            f"  its config ran once ({counted(b['seeds'], 'seed')}): run its repeat before the next idea "
            "(program.md): " + repeat_command(st["context"]["track"], b["run_id"])
        )
    if line := onto_best(st):
        out.append(line)
    if line := confirms_line(st.get("best_confirms") or []):
        out.append(line)
    if st["ceiling"]:
        out.append(f"note: {st['ceiling']}")
    return out


def confirms_line(confirms: list[dict[str, str]]) -> str:
    """What `autorl confirm` said of the best keep so far, by its strongest confirm (the most seeds a side):
    a second confirm of it is a repeat."""
    if not confirms:
        return ""
    c = strongest(confirms)
    budget, delta, p, power = (as_float(c, k) for k in ("budget", "delta", "p_value", "power"))  # None: empty
    parts = [f"delta {delta:+.4f}"] if delta is not None else []
    parts += [f"p {p:.3g}"] if p is not None else []
    if power is not None:  # a confirm recorded before confirmed.tsv had the column has none
        weak = power < POWER and c["verdict"] != "improved"
        parts.append(f"power {power:.2f}" + (f" (below {POWER:.0%}: its 'no' proves little)" if weak else ""))
    figures = ", ".join(parts + ([c["confirm_id"]] if c["confirm_id"] else []))
    at = f" at {budget:g} s" if budget is not None else ""
    figures += "; " if figures else ""
    others = sorted({o["verdict"] for o in confirms if o is not c} - {c["verdict"]})
    fewer = f", the rest (on as many seeds or fewer) read {' / '.join(others)}" if others else ""
    return (
        f"best kept, confirmed on the test split{at}: {c['verdict'] or '?'} ({figures}{len(confirms)} "
        f"confirm(s) of it{fewer}: another at this budget repeats a test)"
    )


def confirm_plan(same: list[LedgerRow], best: LedgerRow | None, nf: NoiseFloor) -> dict[str, Any] | None:
    """The seeds a side and power `autorl confirm` would choose for the best keep now (its planned_size)."""
    from autorl.commands.confirm import planned_size  # here: status stays light without a keep to size

    if (sized := planned_size(same, best, nf)) is None:
        return None
    return {"seeds": sized.seeds, "power": sized.power, "chosen_by": sized.chosen_by}


def render(st: Mapping[str, Any]) -> str:
    """The human/agent view, bounded (~30 lines)."""
    if "message" in st:
        return st["message"]
    c = st["context"]
    budget = f"budget {c['budget']:g} s" if c["budget"] is not None else "no budget recorded"
    head = f"trials: {c['trials']} ({c['track']} track, eval {c['eval_hash'][:8]}, "
    head += f"harness {c['harness_hash'][:8]}, {budget})"
    out = [head]
    if c.get("budget_note"):
        out.append(f"budget: {c['budget_note']}")
    if c["hidden"]:
        out.append(c["hidden"])
    out += best_lines(st)
    nf = st["noise_floor"]
    out.append(f"noise floor (single-seed sd): {nf['text']}")
    kr = st["keep_rate"]
    rate = f"{kr['kept']}/{kr['decided']}" + (f" ({kr['kept'] / kr['decided']:.0%})" if kr["decided"] else "")
    rate += " (ideas decided, each config once; the baseline and its repeats not counted)"
    out.append(
        f"keep rate: {rate}; trials since last keep: {st['since_last_keep']}; "
        f"crashes: {st['crashes']}; timeouts: {st['timeouts']}"
    )
    out.append(chance_line(st["chance"]))
    if line := fidelity_line(st.get("fidelity")):
        out.append(line)
    if line := cost_line(st.get("cost")):
        out.append(line)
    if st["pending"]:
        out.append(f"pending (mark them: uv run autorl mark ...): {', '.join(st['pending'])}")
    if st["not_kept_streak"] >= STREAK_WARNING:
        out.append(
            f"WARNING: {st['not_kept_streak']} trials in a row not kept since the last keep or diagnosis: "
            f"stop tuning and diagnose (`uv run autorl show RUN_ID`); a lesson starting `{DIAGNOSIS}` starts "
            "the count again"
        )
    for m in st["remarks"]:
        ref = (
            f"; reference {m['reference_before'] or '-'} -> {m['reference_after'] or '-'}"
            if m["reference_before"] != m["reference_after"]
            else ""
        )
        out.append(
            f"re-marked {m['run_id']}: {m['old']} -> {m['new']} ({m['reason']}){ref}, {m['timestamp']}"
        )
    out.append(f"last {len(st['last'])} trials (oldest first):")
    out.append(f"  {'run_id':<24} {'score':>11} {'delta':>8} {'p':>6} {'verdict':<12} {'decision':<8} note")
    for r in st["last"]:
        score = f"{r['eval_score']:.4f}" if r["eval_score"] is not None else r["status"]
        score = "aborted" if r["aborted"] and r["eval_score"] is None else score
        delta = f"{r['delta']:+.4f}" if r["delta"] is not None else "-"
        p = f"{r['p_value']:.3f}" if r["p_value"] is not None else "-"
        void = "contended, not measured: " if "contended" in r["health"] else ""
        out.append(
            f"  {r['run_id']:<24} {score:>11} {delta:>8} {p:>6} {r['verdict'] or '-':<12} "
            f"{r['decision']:<8} {cut(void + r['description'], 70)}"
        )
    out += tried_lines(st["tried"])
    out += in_flight_lines(st.get("in_flight", []))
    if st["lessons"]:
        out.append(f"latest {len(st['lessons'])} lessons (oldest first):")
        out.extend(f"  {x['run_id']} ({x['decision']}): {x['lesson']}" for x in st["lessons"])
    return "\n".join(out)


def main(
    as_json: bool = False,
    last: int = 8,
    ledger: Ledger | None = None,
    track: str | None = None,
    all_contexts: bool = False,
) -> int:
    ledger = ledger or Ledger()
    rows = ledger.rows()
    confirmed, fidelity = (t.read(t.beside(ledger)) for t in (CONFIRMED, FIDELITY))
    st = collect(rows, last, track, ledger.history(), confirmed, fidelity)
    if "context" in st:
        best = st.get("best") or {}
        st["in_flight"] = in_flight(st["context"]["track"], best.get("run_id"))
    if all_contexts:
        st["contexts"] = contexts(rows)
    if as_json:
        print(json.dumps(st, indent=1))
        return 0
    print(render(st))
    if all_contexts:
        print("contexts (track, eval, harness, budget: trials, latest run):")
        for c in st["contexts"]:
            budget = f"{c['budget']:g} s" if c["budget"] is not None else "-"
            print(
                f"  {c['track']} {c['eval_hash'][:8]} {c['harness_hash'][:8]} {budget}: "
                f"{c['trials']} trials, latest {c['latest']}"
            )
    return 0
