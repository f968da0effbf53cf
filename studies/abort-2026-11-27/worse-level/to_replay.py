"""The 2026-11-25 LLM pool (scripts/aa_pool.py's export format) in scripts/abort_replay.py's format, without
rungs: what lucky.py replays on the LLM track.

    python3 studies/abort-2026-11-27/worse-level/to_replay.py
"""

import gzip
import json

SRC = "studies/validity-2026-11-25/llm-pool/llm-pool.jsonl.gz"
OUT = "studies/abort-2026-11-27/worse-level/llm90-pools.jsonl.gz"
rows, seeds = {}, {}
for line in gzip.open(SRC, "rt"):
    r = json.loads(line)
    if "row" in r:
        rows[r["pool"]] = r["row"]
        continue
    keep = {k: r[k] for k in ("env", "example_id", "sample", "score")}
    seeds.setdefault(r["pool"], {}).setdefault(r["seed"], []).append(keep)
with gzip.open(OUT, "wt") as f:
    for name, short in (("pool A", "A"), ("pool B", "B")):
        header = {"pool": short, "header": True, "track": "llm", "description": name, "run_ids": []}
        header |= {"config_hash": rows[name]["config_hash"], "fractions": [0.25, 0.5], "context": rows[name]}
        f.write(json.dumps(header) + "\n")
        for k, seed_rows in seeds[name].items():
            line = {"pool": short, "seed": k, "rows": seed_rows, "rungs": {}}
            f.write(json.dumps(line | {"training_seconds": 90.0, "overhead_seconds": 0.0}) + "\n")
print({k: len(v) for k, v in seeds.items()})
