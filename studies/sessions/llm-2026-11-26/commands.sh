#!/bin/bash
# commands in order
rm -rf /tmp/sess-llm2 && git clone -q /work/main /tmp/sess-llm2 && cd /tmp/sess-llm2 && git checkout -q 4eca9bb && git log --oneline -1
uv sync -q
git checkout -b autorl/2026-11-26-llm
uv run prepare.py
uv run run.py --dry-run
uv run run.py --budget 90 --description "baseline" > run.log 2>&1
uv run autorl mark keep --lesson "baseline"
uv run autorl show
uv run autorl mark keep --run 20261126-212438-4eca9bb --lesson "baseline 0.3973 < base 0.4145 (health/below_base): training reward peaks mid-run (~step 400-700) then falls on every seed; lr 1e-4 likely too high at 90 s"
uv run run.py --all-seeds --description "baseline repeat (noise floor)" > run.log 2>&1
uv run autorl mark discard --lesson "baseline repeat: noise floor"
uv run autorl status
sed lr 1e-4->3e-5 in train.toml; git commit -am "lr 1e-4 -> 3e-5: baseline reward peaks mid-run then falls and eval ends below base, so a 3x smaller step should stop the drift"
uv run run.py --description "lr 1e-4 -> 3e-5: baseline reward peaks mid-run then falls and eval ends below base, so a 3x smaller step should stop the drift" > run.log 2>&1
uv run autorl mark keep --lesson "lr 3e-5 beats 1e-4 at 90 s: +0.070 (p 0.0003, 4/6 seeds), both envs up (arith 0.264->0.313, reverse 0.531->0.623); lr 1e-4 overshoots in short runs"
uv run autorl status
uv run autorl confirm --help
sed temperature 0.7->1.0 in train.toml; git commit -am "sampling temperature 0.7 -> 1.0: more diverse groups should cut the 23% zero-advantage groups and give more signal per step (at lr 1e-4, 1.0 beat 0.7 at 90 s)"
uv run run.py --description "sampling temperature 0.7 -> 1.0: more diverse groups should cut the 23% zero-advantage groups and give more signal per step (at lr 1e-4, 1.0 beat 0.7 at 90 s)" > run.log 2>&1
git reset --hard HEAD~1
uv run autorl mark discard --lesson "temperature 1.0 at lr 3e-5: -0.023 after 1 seed (arith 0.272 vs ref 0.313, reverse ~same); the 90 s ranking of 1.0 over 0.7 seen at lr 1e-4 does not carry to lr 3e-5"
uv run autorl status
sed orchestrator.batch_size 64->32 in train.toml
git commit -am "batch_size 64 -> 32 (4 prompts x 8): twice the optimizer steps in the same 90 s, each on fresher rollouts"
uv run run.py --description "batch_size 64 -> 32 (4 prompts x 8): twice the optimizer steps in the same 90 s, each on fresher rollouts" > run.log 2>&1
git reset --hard HEAD~1
uv run autorl mark discard --lesson "batch_size 32: -0.003 after 1 seed; only 1067 steps vs ~800 at 64 (1.3x, not 2x: per-step overhead), no gain from more, noisier steps"
uv run autorl status
sed trainer.optim.lr 3e-5->5e-5 in train.toml
git commit -am "lr 3e-5 -> 5e-5: bracket the lr optimum between 3e-5 (kept) and 1e-4 (drifts); a faster step may learn more in 90 s"
uv run run.py --description "lr 3e-5 -> 5e-5: bracket the lr optimum between 3e-5 (kept) and 1e-4 (drifts); a faster step may learn more in 90 s" > run.log 2>&1
git reset --hard HEAD~1
uv run autorl mark discard --lesson "lr 5e-5: -0.009 after 1 seed (arith 0.324 up, reverse 0.594 down vs 0.623); with 1e-4 at -0.07, the 90 s optimum sits at or below 3e-5"
uv run autorl status
edit train.toml: max_steps "None" -> 800; [trainer.scheduler] type "constant" -> "cosine" (default warmup_steps 10, min_lr 0)
uv run run.py --dry-run
git commit -am "cosine lr decay to 0 over max_steps 800 (~the steps 90 s allows): anneal the lr so the final weights settle instead of drifting"
uv run run.py --description "cosine lr decay to 0 over max_steps 800 (~the steps 90 s allows): anneal the lr so the final weights settle instead of drifting" > run.log 2>&1
git reset --hard HEAD~1
uv run autorl mark discard --lesson "cosine decay to 0 over max_steps 800: +0.016 on 6 seeds (p 0.046, inconclusive, needs 9/side; seeds reached 756-779 steps); near-miss: annealing helps a little, not enough at 90 s; no re-run (12-seed re-run 19 min does not fit the night's deadline; tool says the reference's 4 seeds are too few)"
uv run autorl status
sed orchestrator.group_size 8->16 in train.toml
git commit -am "group_size 8 -> 16 (batch 64 = 4 prompts x 16): bigger groups leave fewer all-same-reward groups (23% zero-advantage now) and a less noisy baseline"
uv run run.py --description "group_size 8 -> 16 (batch 64 = 4 prompts x 16): bigger groups leave fewer all-same-reward groups (23% zero-advantage now) and a less noisy baseline" > run.log 2>&1
git reset --hard HEAD~1
uv run autorl mark discard --lesson "group_size 16 (4 prompts x 16): -0.001 on 6 seeds (interim deltas +0.022 -> +0.0005); fewer prompts per step offsets the richer groups: no effect at 90 s"
uv run autorl status
uv run autorl confirm > confirm.log 2>&1
uv run autorl report --md report.md
uv run autorl status > status.txt
kill <pid of autorl.engine.warm_starter started by the trials>   # or wait 10 min; AUTORL_WARM_KEEP=0 avoids it
