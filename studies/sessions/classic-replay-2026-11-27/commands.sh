# commands in order
date -u
rm -rf /tmp/replay-classic && git clone -q /work/main /tmp/replay-classic && cd /tmp/replay-classic && git log --oneline -1
uv sync -q
cat program.md
cat classic.toml
git checkout -b autorl/replay-classic-20261127
uv run run.py --track classic --dry-run
uv run run.py --track classic --description "baseline" > run.log 2>&1
cp run.log logs/20261127-044126-bc02282.log
uv run autorl mark keep --lesson "baseline"
uv run run.py --track classic --all-seeds --description "baseline repeat (noise floor)" > run.log 2>&1
cp run.log logs/20261127-044242-bc02282.log
uv run autorl mark discard --lesson "baseline repeat: noise floor"
uv run autorl status --track classic
uv run autorl show 20261127-044126-bc02282
# edit classic.toml: num_envs = 16 -> 4
git commit -am "num_envs 16 -> 4: batch 512 -> 128, 4x more PPO updates per env step; classic.md measured smaller rollouts learn fastest"
uv run run.py --track classic --description "num_envs 16 -> 4: batch 512 -> 128, 4x more PPO updates per env step; classic.md measured smaller rollouts learn fastest" > run.log 2>&1
git reset --hard HEAD~1
uv run autorl mark discard --lesson "num_envs 4 alone (lr 5e-4, 4 epochs): -0.029 after 2 seeds, stopped early; both seeds solved at the end (497.6) but the early curve was no faster — more updates at a small lr do not speed learning"
uv run autorl status --track classic
# edit classic.toml: learning_rate = 5e-4 -> 2e-3
git commit -am "learning_rate 5e-4 -> 2e-3: 4x larger Adam steps should reach 475 in fewer env steps (more area under the curve)"
uv run run.py --track classic --description "learning_rate 5e-4 -> 2e-3: 4x larger Adam steps should reach 475 in fewer env steps (more area under the curve)" > run.log 2>&1
cp run.log logs/20261127-044554-cd6df8a.log
git reset --hard HEAD~1
uv run autorl show 20261127-044554-cd6df8a
uv run autorl mark discard --run 20261127-044554-cd6df8a --lesson "lr 2e-3 solves early (eval 498 by 16-24k env steps) but training reward collapses after the peak on 2/2 seeds (500@66 -> 168; greedy eval 500 -> 353): a large lr that barely anneals (linear to 0 at 300k, the score stops at 50k) destabilises after solving; -0.018, stopped after 2 seeds"
# edit classic.toml: total_env_steps = 300_000 -> 50_000
git commit -am "total_env_steps 300k -> 50k: the linear lr schedule then anneals to 0 inside the scored 50k window, damping the post-solve collapses seen in the baseline and at lr 2e-3"
uv run run.py --track classic --description "total_env_steps 300k -> 50k: the linear lr schedule then anneals to 0 inside the scored 50k window, damping the post-solve collapses seen in the baseline and at lr 2e-3" > run.log 2>&1
cp run.log logs/20261127-044705-3d4c5ac.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "total_env_steps 50k (lr 5e-4 annealed to 0 over the scored window): -0.060 after 2 seeds, 0/2 solved at the end (final 340.7): annealing a small lr slows learning more than it stabilises; the collapse fix needs a larger start lr, not less lr"
uv run autorl status --track classic
# edit classic.toml: update_epochs = 4 -> 10
git commit -am "update_epochs 4 -> 10: more passes over each 512-step rollout extract more learning per env step (the score counts env steps, not seconds)"
uv run run.py --track classic --description "update_epochs 4 -> 10: more passes over each 512-step rollout extract more learning per env step (the score counts env steps, not seconds)" > run.log 2>&1
cp run.log logs/20261127-044839-0b39dd4.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "update_epochs 10 at lr 5e-4, batch 512: -0.162 (p 0.963) after 2 seeds; both solved by the end (491) but later: more epochs on a large batch slows the early curve here, the opposite of what was expected"
# edit classic.toml: num_envs 16 -> 8, num_steps 32 -> 16, learning_rate 5e-4 -> 2e-3
git commit -am "batch 512 -> 128 (num_envs 8, num_steps 16) with lr 5e-4 -> 2e-3: 4x more updates per env step at a 4x step size; each half alone was flat, classic.md measured this pair 0.825 vs 0.679"
uv run run.py --track classic --description "batch 512 -> 128 (num_envs 8, num_steps 16) with lr 5e-4 -> 2e-3: 4x more updates per env step at a 4x step size; each half alone was flat, classic.md measured this pair 0.825 vs 0.679" > run.log 2>&1
cp run.log logs/20261127-045002-bc7116e.log
uv run autorl mark keep --lesson "batch 128 (num_envs 8 x num_steps 16) + lr 2e-3: 0.832, +0.102 (p 0.048), 5/5 seeds solved, final 500; neither half alone helped: small batches need the larger lr (and vice versa); costs 4x the updates (2m50s a trial)"
uv run autorl status --track classic
# edit classic.toml: ent_coef 0.01 -> 0.0
git commit -am "ent_coef 0.01 -> 0.0: the score evaluates the greedy policy, so the entropy bonus only slows the policy's commitment; with small batches the updates give exploration enough noise"
uv run run.py --track classic --description "ent_coef 0.01 -> 0.0: the score evaluates the greedy policy, so the entropy bonus only slows the policy's commitment; with small batches the updates give exploration enough noise" > run.log 2>&1
cp run.log logs/20261127-045312-93b246e.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "ent_coef 0 on the batch-128/lr-2e-3 keep: -0.030 after 2 seeds (both solved): the entropy bonus is not what holds the curve back"
# edit classic.toml: norm_obs false -> true
git commit -am "norm_obs false -> true: CartPole's velocity features are on other scales than its angles; running-normalised inputs let lr 2e-3 act evenly on every input"
uv run run.py --track classic --description "norm_obs false -> true: CartPole's velocity features are on other scales than its angles; running-normalised inputs let lr 2e-3 act evenly on every input" > run.log 2>&1
cp run.log logs/20261127-045432-cd36711.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "norm_obs on the batch-128/lr-2e-3 keep: -0.031 after 4 seeds (4/4 solved): CartPole's raw inputs are fine at this lr; normalising does not speed the curve"
uv run autorl show 20261127-045002-bc7116e
# edit classic.toml: learning_rate 2e-3 -> 4e-3
git commit -am "learning_rate 2e-3 -> 4e-3 on the batch-128 keep: it no longer collapses and only loses the first grid points (eval 160-310 before 4-16k steps), so a larger step should climb sooner"
uv run run.py --track classic --description "learning_rate 2e-3 -> 4e-3 on the batch-128 keep: it no longer collapses and only loses the first grid points (eval 160-310 before 4-16k steps), so a larger step should climb sooner" > run.log 2>&1
cp run.log logs/20261127-045730-47f5b30.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "lr 4e-3 on the batch-128 keep: +0.054 (p 0.092), 5/5 solved, no collapse; needs ~15 seeds a side and the reference's 5 seeds alone are too few, so no re-run: a likely real gain from a larger step left undecided"
# edit classic.toml: max_grad_norm 0.5 -> 5.0
git commit -am "max_grad_norm 0.5 -> 5.0: the early large value-loss gradients get clipped to 0.5, shrinking the first updates; a loose clip lets the lr-2e-3 steps act in the first 10k env steps, where the keep loses its score"
uv run run.py --track classic --description "max_grad_norm 0.5 -> 5.0: the early large value-loss gradients get clipped to 0.5, shrinking the first updates; a loose clip lets the lr-2e-3 steps act in the first 10k env steps, where the keep loses its score" > run.log 2>&1
cp run.log logs/20261127-050045-e376197.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "max_grad_norm 5 on the batch-128 keep: -0.027 after 4 seeds, 3/4 solved at the end (464): loosening the clip does not speed the first updates and makes the end less stable; keep 0.5"
# edit classic.toml: clip_coef 0.2 -> 0.3
git commit -am "clip_coef 0.2 -> 0.3: lr 4e-3 read +0.054, so bigger policy moves per update look like the lever; a wider trust region allows them without raising the lr of the value net"
uv run run.py --track classic --description "clip_coef 0.2 -> 0.3: lr 4e-3 read +0.054, so bigger policy moves per update look like the lever; a wider trust region allows them without raising the lr of the value net" > run.log 2>&1
uv run autorl status --track classic
uv run autorl show 20261127-050304-5a0ec20
uv run autorl show 20261127-045730-47f5b30
uv run autorl mark discard --run 20261127-050304-5a0ec20 --lesson "diagnosis after 5 not kept: ..."
# edit classic.toml: update_epochs 4 -> 8
git commit -am "update_epochs 4 -> 8 on the batch-128 keep: the diagnosis says the score is the first climb, set by how far the policy moves per env step; 2x passes move it further, as lr 4e-3 did (+0.054)"
uv run run.py --track classic --description "update_epochs 4 -> 8 on the batch-128 keep: the diagnosis says the score is the first climb, set by how far the policy moves per env step; 2x passes move it further, as lr 4e-3 did (+0.054)" > run.log 2>&1
cp run.log logs/20261127-050445-72177ff.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "update_epochs 8 on the batch-128 keep: +0.024 (p 0.28), 5/5 solved; too small to decide (>64 seeds): more passes move the first climb less than lr 4e-3 did"
# edit classic.toml: hidden_width 64 -> 128
git commit -am "hidden_width 64 -> 128: a wider actor and critic fit CartPole's value and policy in fewer updates, speeding the first climb that the score measures"
uv run run.py --track classic --description "hidden_width 64 -> 128: a wider actor and critic fit CartPole's value and policy in fewer updates, speeding the first climb that the score measures" > run.log 2>&1
cp run.log logs/20261127-050745-4fef7e1.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "hidden_width 128 on the batch-128 keep: -0.014 after 2 seeds (2/2 solved): network width is not the bottleneck of the first climb"
# edit classic.toml: gae_lambda 0.95 -> 0.99
git commit -am "gae_lambda 0.95 -> 0.99: early on the critic is poor, so advantages that lean less on its bootstrap (closer to Monte Carlo over the 16-step rollout) should point the first updates the right way sooner"
uv run run.py --track classic --description "gae_lambda 0.95 -> 0.99: early on the critic is poor, so advantages that lean less on its bootstrap (closer to Monte Carlo over the 16-step rollout) should point the first updates the right way sooner" > run.log 2>&1
cp run.log logs/20261127-050855-84a01f8.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "gae_lambda 0.99 on the batch-128 keep: -0.039 after 4 seeds (4/4 solved): leaning less on the early critic does not speed the first climb; keep 0.95"
uv run autorl confirm > confirm.log 2>&1
uv run autorl status --track classic > status.txt 2>&1
uv run autorl report --track classic --out progress.png --md report.md
git diff bc02282 -- classic.toml > classic.diff
