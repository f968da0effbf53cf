"""After a swarm: every run directory whose seeds trained has its row in results.tsv, and no claim is live.
Usage: uv run python nothing_lost.py (in the swarm's checkout)."""

from autorl.io import paths
from autorl.record import claims
from autorl.record.ledger import Ledger

rows = {r["run_id"]: r for r in Ledger(paths.results_file()).rows()}
trained = [
    d.name
    for d in sorted(paths.runs_dir().iterdir())
    if d.is_dir() and not d.name.startswith(("confirm-", "fidelity-")) and any(d.glob("seed-*/outcome.json"))
]
missing = [run_id for run_id in trained if run_id not in rows]
statuses = {}
for run_id in trained:
    if run_id in rows:
        statuses[rows[run_id]["status"]] = statuses.get(rows[run_id]["status"], 0) + 1
files = [f for f in claims.claims_dir().glob("*") if not f.name.startswith(".")]
print(
    f"trials that trained: {len(trained)}; with their row: {len(trained) - len(missing)}; "
    f"rows by status: {statuses}"
)
print(f"run directories without a row: {missing or 'none'}")
print(f"claims in flight: {len(claims.in_flight())}; claim files left: {len(files)}")
