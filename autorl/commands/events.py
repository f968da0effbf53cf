"""`autorl events`: TensorBoard event files for recorded runs. Every trial, confirm and fidelity run writes
its own when it ends (autorl/record/events.py); this writes them for runs recorded before that, or again."""

from __future__ import annotations

from pathlib import Path

from autorl.io import paths
from autorl.record import events
from autorl.record.ledger import Ledger, LedgerError


def main(runs: list[str] | tuple[str, ...] = ()) -> int:
    """The named runs (run ids, unique prefixes or run directories), else every trial of results.tsv whose
    run directory is here. LedgerError (exit 2) for a run that is not recorded or whose directory is gone."""
    ledger = Ledger()
    chosen: list[tuple[Path, str]] = []
    for run in runs:
        if Path(run).is_dir():
            chosen.append((Path(run), ""))
            continue
        row = ledger.find(run)
        if not (paths.runs_dir() / row.run_id).is_dir():
            raise LedgerError(f"{paths.runs_dir() / row.run_id} is missing: the run directory was removed")
        chosen.append((paths.runs_dir() / row.run_id, row.description))
    if not runs:
        rows = ledger.rows() if ledger.path.exists() else []
        chosen = [
            (paths.runs_dir() / r.run_id, r.description)
            for r in rows
            if (paths.runs_dir() / r.run_id).is_dir()
        ]
    for i, (run_dir, description) in enumerate(chosen, 1):
        written = events.write_run(run_dir, description)
        print(
            f"[events] {i}/{len(chosen)} {run_dir.name}: {len(written)} seed(s) -> {run_dir / events.TB_DIR}"
        )
    print(f"[events] {len(chosen)} run(s); to watch them: tensorboard --logdir {paths.runs_dir()}")
    return 0
