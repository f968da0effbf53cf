#!/usr/bin/env bash
# A/B of the changed tests: the tree before (229b91d, a worktree: git worktree add /tmp/old 229b91d) and
# after, alternated, serial, per-test CPU (cpuplug.py). The worktree has no .venv: its `uv run --no-sync`
# test fails at once there (not a figure); test_parallel's ray-local trial is the one merged away.
#   bash studies/suite-2026-11-29/changed-ab.sh > changed-ab.log 2>&1  (then the jsonl files appended)
set -uo pipefail
old_tests="tests/test_classic.py::test_a_config_that_learns_faster_is_improved tests/test_ray.py::test_a_node_lost_mid_trial_costs_only_its_seed tests/test_ray.py::test_ray_local_under_uv_run_no_sync_records_a_row tests/test_parallel.py::test_ray_local_runs_both_classic_seeds_as_ray_tasks"
new_tests="tests/test_classic.py::test_a_config_that_learns_faster_is_improved tests/test_ray.py::test_a_node_lost_mid_trial_costs_only_its_seed tests/test_ray.py::test_ray_local_under_uv_run_no_sync_records_a_row"
for i in 1 2; do
  echo "== round $i before 229b91d $(date -u +%T)"
  (cd /tmp/old && PYTHONPATH=/tmp/old:/work/main/studies/suite-2026-11-29 CPUPLUG_OUT=/tmp/cpuprof/ab-before-$i.jsonl /work/main/.venv/bin/python -m pytest -q -p no:cacheprovider -n 0 -p cpuplug $old_tests 2>&1 | tail -1)
  echo "== round $i after $(cd /work/main && git rev-parse --short HEAD) $(date -u +%T)"
  (cd /work/main && PYTHONPATH=/work/main:/work/main/studies/suite-2026-11-29 CPUPLUG_OUT=/tmp/cpuprof/ab-after-$i.jsonl .venv/bin/python -m pytest -q -p no:cacheprovider -n 0 -p cpuplug $new_tests 2>&1 | tail -1)
done
echo "end $(date -u +%T)"
