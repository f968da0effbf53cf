cd /work/main
for i in 1 2 3; do
  echo "== round $i one-core $(date -u +%T)"; uv run --no-sync --extra bench python scripts/bench_trl.py --threads 1 --steps 50 2>&1 | tail -4
  echo "== round $i two-core $(date -u +%T)"; uv run --no-sync --extra bench python scripts/bench_trl.py --threads 2 --sampler hf-process --steps 50 2>&1 | tail -4
done
echo "end $(date -u +%T)"
