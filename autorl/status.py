"""`autorl status`: a short, bounded view of the research state for the agent (instead of old logs).

At most ~30 lines whatever the ledger size: the best kept trial, the noise floor, counts, the last N trials.
Only trials comparable with the latest one (same track, eval set and harness) are summarised.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from autorl.ledger import Ledger, as_float, best_kept, comparable
from autorl.result import reference_score
from autorl.stats import noise_floor
from autorl.track import get_track

MAX_LAST = 20  # --last is capped so the view stays bounded
TEXT_WIDTH = 60  # descriptions and lessons are cut to this many characters


def _cut(text: str, width: int = TEXT_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _num(row: Mapping[str, str], key: str, fmt: str = "{:.4f}") -> str:
    v = as_float(row, key)
    return fmt.format(v) if v is not None else "-"


def _brief(row: Mapping[str, str]) -> dict[str, Any]:
    return {
        "run_id": row["run_id"],
        "commit": row["commit"],
        "eval_score": as_float(row, "eval_score"),
        "eval_ci": [as_float(row, "eval_ci_low"), as_float(row, "eval_ci_high")],
        "delta": as_float(row, "delta"),
        "p_value": as_float(row, "p_value"),
        "verdict": row["verdict"],
        "status": row["status"],
        "decision": row["decision"],
        "description": row["description"],
        "lesson": row["lesson"],
    }


def collect(rows: Sequence[Mapping[str, str]], last: int = 8) -> dict[str, Any]:
    """The status as a dict (what `--json` prints)."""
    if not rows:
        return {"trials": 0, "message": "no trials yet: run the baseline (see program.md, setup)"}
    latest = rows[-1]
    track, eval_hash, h_hash = latest["track"], latest["eval_hash"], latest["harness_hash"]
    same = [r for r in rows if comparable(r, track, eval_hash, h_hash)]
    best = best_kept(same, track, eval_hash, h_hash)
    # The noise floor the verdict uses: the track's prior scaled by the reference's score.
    prior = get_track(track).prior_seed_sd(reference_score(best))
    nf = noise_floor(same, track=track, eval_hash=eval_hash, harness_hash=h_hash, prior_sd=prior)
    decided = [r for r in same if r["decision"] in ("keep", "discard")]
    kept = [r for r in same if r["decision"] == "keep"]
    last_keep = max((i for i, r in enumerate(same) if r["decision"] == "keep"), default=None)
    since = len(same) - 1 - last_keep if last_keep is not None else len(same)
    # Trials in a row (newest first) that ended in crash/timeout or were not kept: the diagnose signal.
    streak = 0
    for r in reversed(same):
        if r["decision"] == "keep":
            break
        streak += 1
    n_last = max(1, min(last, MAX_LAST))
    return {
        "trials": len(rows),
        "context": {
            "track": track,
            "eval_hash": eval_hash,
            "harness_hash": h_hash,
            "trials": len(same),
            "other_trials": len(rows) - len(same),
        },
        "best": _brief(best) if best else None,
        "best_is_kept": bool(best and best["decision"] == "keep"),
        "noise_floor": {
            "sd": nf.sd,
            "measured_sd": nf.measured_sd,
            "df": nf.df,
            "repeated_configs": nf.n_configs,
            "text": nf.describe(),
        },
        "keep_rate": {"kept": len(kept), "decided": len(decided)},
        "since_last_keep": since,
        "not_kept_streak": streak,
        "crashes": sum(r["status"] == "crash" for r in same),
        "timeouts": sum(r["status"] == "timeout" for r in same),
        "pending": [r["run_id"] for r in same if r["decision"] == "pending"][-5:],
        "last": [_brief(r) for r in same[-n_last:]],
    }


def render(st: Mapping[str, Any]) -> str:
    """The human/agent view, bounded (~30 lines)."""
    if not st["trials"]:
        return st["message"]
    c = st["context"]
    head = f"trials: {c['trials']} ({c['track']} track, eval {c['eval_hash'][:8]}, "
    head += f"harness {c['harness_hash'][:8]})"
    if c["other_trials"]:
        head += f"; {c['other_trials']} trials under another track/eval/harness not shown"
    out = [head]
    b = st["best"]
    if b:
        what = "best kept" if st["best_is_kept"] else "reference (nothing kept yet: the baseline)"
        ci = b["eval_ci"]
        ci_text = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if None not in ci else ""
        score = f"{b['eval_score']:.4f}" if b["eval_score"] is not None else "-"
        out.append(f"{what}: {b['run_id']} eval_score {score}{ci_text}  {_cut(b['description'], 50)}")
    else:
        out.append("best kept: none (no successful trial yet)")
    nf = st["noise_floor"]
    out.append(f"noise floor (single-seed sd): {nf['text']}")
    kr = st["keep_rate"]
    rate = f"{kr['kept']}/{kr['decided']}" + (f" ({kr['kept'] / kr['decided']:.0%})" if kr["decided"] else "")
    out.append(
        f"keep rate: {rate}; trials since last keep: {st['since_last_keep']}; "
        f"crashes: {st['crashes']}; timeouts: {st['timeouts']}"
    )
    if st["pending"]:
        out.append(f"pending (mark them: uv run autorl mark ...): {', '.join(st['pending'])}")
    if st["not_kept_streak"] >= 5:
        out.append(
            f"WARNING: {st['not_kept_streak']} trials in a row not kept: stop tuning and diagnose "
            "(read metrics.jsonl and run.log of the last failures) before the next hypothesis"
        )
    out.append(f"last {len(st['last'])} trials (oldest first):")
    out.append(f"  {'run_id':<24} {'score':>7} {'delta':>8} {'p':>6} {'verdict':<12} {'decision':<8} note")
    for r in st["last"]:
        score = f"{r['eval_score']:.4f}" if r["eval_score"] is not None else r["status"]
        delta = f"{r['delta']:+.4f}" if r["delta"] is not None else "-"
        p = f"{r['p_value']:.3f}" if r["p_value"] is not None else "-"
        note = r["description"] + (f" | lesson: {r['lesson']}" if r["lesson"] else "")
        out.append(
            f"  {r['run_id']:<24} {score:>7} {delta:>8} {p:>6} {r['verdict'] or '-':<12} "
            f"{r['decision']:<8} {_cut(note, 70)}"
        )
    return "\n".join(out)


def main(as_json: bool = False, last: int = 8, ledger: Ledger | None = None) -> int:
    rows = (ledger or Ledger()).rows()
    st = collect(rows, last)
    print(json.dumps(st, indent=1) if as_json else render(st))
    return 0
