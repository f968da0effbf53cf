#!/bin/bash
# The LLM fidelity study on the re-recorded session studies/sessions/llm-2026-11-27: its configs re-trained at 4x
# its budget (360 s per seed), 3 fresh seeds per config, 6 configs (the baseline, both keeps, three discards
# spread over the short scores). A fidelity run re-trains a context's configs only under the harness they ran
# under: it ran in the session's own clone (/tmp/sess-llm3, at the session's commit bc02282, with its ledger,
# marks and runs/), right after the session. Niced to -10; nothing else CPU-heavy ran beside it, but for the
# first three seeds (the developer's short test runs; the seeds' cpu_wait_share says how much).
# Three starts (fidelity.log): the first was ended by the end of the developer's session after one seed had
# trained 31 s; --resume re-ran the missing seeds; that resume was stopped at a seed boundary (its 4th seed
# had trained 28 s) to add --png, and resumed again.
set -x
cd /tmp/sess-llm3   # the session's clone: git clone of /work/main at bc02282, the agent's branch, its runs/
nice -n -10 uv run autorl fidelity --track llm --factor 4 --seeds 3 --configs 6 --png fidelity.png > fidelity.log
nice -n -10 uv run autorl fidelity --resume fidelity-20261127-053150-llm >> fidelity.log 2>&1
nice -n -10 uv run --no-sync autorl fidelity --resume fidelity-20261127-053150-llm --png fidelity.png >> fidelity.log 2>&1
uv run --no-sync autorl status --track llm > status.txt 2>&1
uv run --no-sync autorl report --track llm --md report.md > report.out 2>&1
# pressure.log: while true; do echo "$(date -u +%FT%TZ) $(head -1 /proc/pressure/cpu)"; sleep 30; done
