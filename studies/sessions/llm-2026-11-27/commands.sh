# session llm3 commands, in order
date
rm -rf /tmp/sess-llm3 && git clone -q /work/main /tmp/sess-llm3 && cd /tmp/sess-llm3 && git log --oneline -1
uv sync -q
cat README.md; cat program.md; cat docs/config.md; sed -n 27,61p docs/train-toml.md   # reading
git checkout -b autorl/llm3-20261127
uv run run.py --help
mkdir -p logs
uv run run.py --dry-run
uv run autorl status
uptime
uv run run.py --budget 90 --description "baseline" > run.log 2>&1
cp run.log logs/20261127-024548-bc02282.log
uv run autorl mark keep --lesson "baseline"
uptime
uv run run.py --all-seeds --description "baseline repeat (noise floor)" > run.log 2>&1
cp run.log logs/20261127-025535-bc02282.log
uv run autorl mark discard --lesson "baseline repeat: noise floor"
uv run autorl status
uv run autorl confirm --help
uv run run.py --explain trainer.optim.lr
# edit train.toml: [trainer.optim] lr = 1e-4 -> 3e-5 (sed)
git commit -qam "lr 1e-4 -> 3e-5: at 90 s the baseline ends below base (policy drifts); a 3x smaller step should keep the early gain"
uptime
uv run run.py --description "lr 1e-4 -> 3e-5: at 90 s the baseline ends below base (policy drifts); a 3x smaller step should keep the early gain" > run.log 2>&1
cp run.log logs/20261127-030523-0fba84e.log
uv run autorl mark keep --lesson "lr 3e-5 beats 1e-4 at 90 s by +0.077 (p 0.0002, 4 seeds): both envs gain (arith 0.26->0.31, reverse 0.52->0.62); 1e-4 overshoots at this budget"
uv run autorl status
uv run autorl show
# edit train.toml: arithmetic source ratio = 1.0 -> 2.0 (python replace)
git commit -qam "arithmetic source ratio 1 -> 2: arithmetic eval lags reverse (0.31 vs 0.62) and has more room; twice the arithmetic groups should lift it more than reverse loses"
uptime
uv run run.py --description "arithmetic source ratio 1 -> 2: arithmetic eval lags reverse (0.31 vs 0.62) and has more room; twice the arithmetic groups should lift it more than reverse loses" > run.log 2>&1
cp run.log logs/20261127-031209-8a717d3.log
uv run autorl mark discard --lesson "arithmetic ratio 2:1 trades reverse for arithmetic ~1:1 (arith +0.012, reverse -0.016; delta -0.002 after 3 seeds): sample allocation is not the bottleneck"
git reset --hard HEAD~1   # (ran right after the mark)
# analysis: python3 over runs/*/seed-0/metrics.jsonl (grad_norm, masked_frac, zero_adv_frac, gen/train seconds)
# edit train.toml: [orchestrator] group_size = 8 -> 16 (sed)
git commit -qam "group_size 8 -> 16 (batch 64 = 4 prompts x 16): 20% of samples carry zero advantage and the group-mean baseline of 8 is noisy; 16 completions per prompt should give more informative advantages per step"
uptime
uv run run.py --description "group_size 8 -> 16 (batch 64 = 4 prompts x 16): 20% of samples carry zero advantage and the group-mean baseline of 8 is noisy; 16 completions per prompt should give more informative advantages per step" > run.log 2>&1
cp run.log logs/20261127-031717-7f7f147.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "group_size 16 (4 prompts/step) hurt arithmetic 0.31->0.26 (reverse flat 0.63), delta -0.027 after 1 seed: fewer distinct prompts per step looks worse for arithmetic"
# edit train.toml: [orchestrator] group_size = 8 -> 4 (sed)
git commit -qam "group_size 8 -> 4 (batch 64 = 16 prompts x 4): group 16 (4 prompts) hurt arithmetic, so more distinct prompts per step should help it"
uptime
uv run run.py --description "group_size 8 -> 4 (batch 64 = 16 prompts x 4): group 16 (4 prompts) hurt arithmetic, so more distinct prompts per step should help it" > run.log 2>&1
cp run.log logs/20261127-031905-8d8cd57.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "group_size 4 (16 prompts/step): +0.012 (p 0.093, 6 seeds; arith 0.313->0.333, reverse flat), seeds_needed 15 and the 4-seed reference too few for a re-run: prompt diversity helps arithmetic a little at most"
# edit train.toml: max_steps "None" -> 700; lr 3e-5 -> 6e-5; [trainer.scheduler] type constant -> linear, warmup_steps 0, decay_steps 700, min_lr 0.0 (python replace)
uv run run.py --dry-run
git commit -qam "linear decay to 0 over max_steps 700 (~85 s) from lr 6e-5 (mean lr 3e-5 as now): front-loaded steps learn faster early, the annealed end removes the end-of-run noise the greedy eval sees"
uptime
uv run run.py --description "linear decay to 0 over max_steps 700 (~85 s) from lr 6e-5 (mean lr 3e-5 as now): front-loaded steps learn faster early, the annealed end removes the end-of-run noise the greedy eval sees" > run.log 2>&1
cp run.log logs/20261127-032858-bbde17d.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "linear decay 6e-5->0 over max_steps 700 (79-81 s used of 90): +0.008 (p 0.17, 6 seeds; reverse 0.62->0.64, arith flat), seeds_needed 28: annealing the same mean lr is no real gain at 90 s"
# edit train.toml: [orchestrator] batch_size 64 -> 128; [trainer.optim] lr 3e-5 -> 6e-5 (sed)
git commit -qam "batch_size 64 -> 128 with lr 3e-5 -> 6e-5 (linear scaling): 16 prompts per step (prompt diversity helped arithmetic) and a cleaner gradient allow a 2x step on half as many steps"
uptime
uv run run.py --description "batch_size 64 -> 128 with lr 3e-5 -> 6e-5 (linear scaling): 16 prompts per step (prompt diversity helped arithmetic) and a cleaner gradient allow a 2x step on half as many steps" > run.log 2>&1
cp run.log logs/20261127-033735-2e5ef65.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "batch 128 + lr 6e-5: 561 steps (not half: per-step cost is sublinear), arith 0.31->0.26, delta -0.027 after 1 seed: a 2x lr hurts even with a 2x batch"
# edit train.toml: [orchestrator] group_size = 8 -> 2 (sed)
git commit -qam "group_size 8 -> 2 (batch 64 = 32 prompts x 2): arithmetic eval rose as prompts per step went 4 -> 8 -> 16 (0.26, 0.31, 0.33); 32 prompts tests whether prompt diversity keeps paying"
uptime
uv run run.py --description "group_size 8 -> 2 (batch 64 = 32 prompts x 2): arithmetic eval rose as prompts per step went 4 -> 8 -> 16 (0.26, 0.31, 0.33); 32 prompts tests whether prompt diversity keeps paying" > run.log 2>&1
cp run.log logs/20261127-033924-b00a44a.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "group_size 2 (32 prompts/step): 52% of groups zero-advantage, arith 0.31->0.28, delta -0.016 after 1 seed: prompt diversity stops paying below 4 completions per prompt; group 4-8 is the sweet spot"
uv run autorl status
uv run autorl show 20261127-030523-0fba84e
uv run autorl show 20261127-033735-2e5ef65
uv run autorl show 20261127-031905-8d8cd57
uv run autorl mark discard --run 20261127-033924-b00a44a --lesson "diagnosis (show on the last failures): training reward rises only ~0.03-0.04 in 90 s (0.32->0.36) and eval differences come from arithmetic's per-seed spread (0.28-0.37; reverse is stable at 0.62-0.63); group 2 wastes 52% of groups on zero advantage, group 4 already 34%: arithmetic groups that all fail carry no signal"
# edit train.toml: arithmetic source gets sampling.temperature = 1.0 (python insert)
uv run run.py --dry-run
git commit -qam "arithmetic rollouts at temperature 0.7 -> 1.0 (reverse stays 0.7): all-fail arithmetic groups carry no signal; more exploration should put a correct answer in more groups"
uptime
uv run run.py --description "arithmetic rollouts at temperature 0.7 -> 1.0 (reverse stays 0.7): all-fail arithmetic groups carry no signal; more exploration should put a correct answer in more groups" > run.log 2>&1
cp run.log logs/20261127-034143-193b6ec.log
uv run autorl show 20261127-034143-193b6ec
git reset --hard HEAD~1
uv run autorl mark discard --lesson "arithmetic temperature 1.0: zero-adv share unchanged at 20% (so the all-equal groups are not all-fail arithmetic ones), steps fell 25% (0.15 vs 0.113 s/step: longer, more diverse samples), delta -0.0005 after 2 seeds: exploration is not the bottleneck"
# edit train.toml: [trainer.optim] betas2 = 0.999 -> 0.99 (sed)
git commit -qam "Adam betas2 0.999 -> 0.99: a run is ~800 steps, shorter than 0.999's ~1000-step memory, so the second moment stays tied to the early gradients; 0.99 tracks the current scale and steps harder as gradients shrink"
uptime
uv run run.py --description "Adam betas2 0.999 -> 0.99: a run is ~800 steps, shorter than 0.999's ~1000-step memory, so the second moment stays tied to the early gradients; 0.99 tracks the current scale and steps harder as gradients shrink" > run.log 2>&1
cp run.log logs/20261127-034517-c977550.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "Adam betas2 0.99: delta -0.003 after 1 seed (arith 0.308, reverse 0.621, 807 steps): Adam's second-moment memory is not what limits learning at 90 s"
# edit train.toml: group_size 8 -> 4; max_steps None -> 700; lr 3e-5 -> 6e-5; scheduler constant -> linear (warmup 0, decay_steps 700, min_lr 0) (python replace)
uv run run.py --dry-run
git commit -qam "combine the two near-misses: group_size 4 (+0.012, p 0.09) with linear decay 6e-5 -> 0 over max_steps 700 (+0.008, p 0.17); they act on different things (prompt diversity, end-of-run noise), so their gains should add"
uptime
uv run run.py --description "combine the two near-misses: group_size 4 (+0.012, p 0.09) with linear decay 6e-5 -> 0 over max_steps 700 (+0.008, p 0.17); they act on different things (prompt diversity, end-of-run noise), so their gains should add" > run.log 2>&1
cp run.log logs/20261127-034712-6ae45a0.log
uv run autorl mark keep --lesson "group 4 + linear decay 6e-5->0 over max_steps 700: +0.024 (p 0.025, 6 seeds; arith 0.313->0.342, reverse 0.621->0.640): the two near-misses add up; caveat: max_steps 700 stops training at ~85 s at any budget"
uv run autorl status
uptime
uv run autorl confirm > confirm.log 2>&1
cp confirm.log logs/confirm-20261127-035606-6ae45a0.log
# edit train.toml: [trainer.optim] lr 6e-5 -> 1e-4 (sed)
git commit -qam "peak lr 6e-5 -> 1e-4 under the linear decay to 0 over 700 steps: constant 1e-4 overshot because its end stayed noisy; with the decay annealing the end, a larger early step should learn more in the first minute"
uptime
uv run run.py --description "peak lr 6e-5 -> 1e-4 under the linear decay to 0 over 700 steps: constant 1e-4 overshot because its end stayed noisy; with the decay annealing the end, a larger early step should learn more in the first minute" > run.log 2>&1
cp run.log logs/20261127-040524-708ab26.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "peak lr 1e-4 under the 700-step linear decay: delta -0.020 after 1 seed (arith 0.322, reverse 0.620): the decay does not rescue a 1e-4 peak; 6e-5 stays the better peak"
# analysis: python3 over runs/20261127-034712-6ae45a0/seed-0/metrics.jsonl (grad_norm)
# edit train.toml: [trainer.optim] max_norm = 1.0 -> "None" (sed)
uv run run.py --dry-run
git commit -qam "gradient clipping off (max_norm 1.0 -> None): it fires on 7% of the kept config's steps (median norm 0.64), likely the batches with the most nonzero advantages; unclipped they count fully in Adam's momentum"
uptime
uv run run.py --description "gradient clipping off (max_norm 1.0 -> None): it fires on 7% of the kept config's steps (median norm 0.64), likely the batches with the most nonzero advantages; unclipped they count fully in Adam's momentum" > run.log 2>&1
cp run.log logs/20261127-040712-ee4ec3b.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "no gradient clipping: delta -0.003 after 1 seed (arith 0.354, reverse 0.622): clipping at 1.0 (7% of steps) neither helps nor hurts at 90 s"
# edit train.toml: [trainer.scheduler] type linear -> cosine, decay_steps line removed (python replace)
uv run run.py --dry-run
git commit -qam "linear -> cosine decay (peak 6e-5 -> 0 at step 700): cosine keeps the lr near its peak longer in the first half and anneals as fully at the end"
uptime
uv run run.py --description "linear -> cosine decay (peak 6e-5 -> 0 at step 700): cosine keeps the lr near its peak longer in the first half and anneals as fully at the end" > run.log 2>&1
cp run.log logs/20261127-040854-3f1bfc3.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "cosine (peak 6e-5 -> 0 at 700) instead of linear: delta -0.016 after 1 seed (arith 0.334, reverse 0.617): more time near the peak lr does not help; linear stays"
# edit train.toml: max_steps 700 -> 750, decay_steps 700 -> 750 (sed)
git commit -qam "max_steps and decay_steps 700 -> 750: the kept config stops after 80-86 s of the 90 s budget; 7% more steps on the same decay shape use the idle seconds"
uptime
uv run run.py --description "max_steps and decay_steps 700 -> 750: the kept config stops after 80-86 s of the 90 s budget; 7% more steps on the same decay shape use the idle seconds" > run.log 2>&1
cp run.log logs/20261127-041034-0394610.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "max_steps/decay 750 (85 s used): delta -0.022 after 1 seed (arith 0.290, reverse 0.648): 50 more steps buy nothing measurable; the single-seed spread (sd ~0.027) dominates such small changes"
# edit train.toml: [orchestrator.train.sampling] temperature 0.7 -> 0.5 (sed)
git commit -qam "training temperature 0.7 -> 0.5: sampled rollouts score ~0.36 while greedy eval scores ~0.49; sampling closer to greedy makes the gradient improve what the greedy eval sees"
uptime
uv run run.py --description "training temperature 0.7 -> 0.5: sampled rollouts score ~0.36 while greedy eval scores ~0.49; sampling closer to greedy makes the gradient improve what the greedy eval sees" > run.log 2>&1
cp run.log logs/20261127-041217-0569b9e.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "training temperature 0.5: +0.011 (p 0.16, 6 seeds; reverse 0.640->0.653, arith 0.342->0.351), seeds_needed 35: sampling closer to greedy helps a little at most; a near-miss to combine later"
# edit train.toml: [trainer.scheduler] min_lr 0.0 -> 1e-5 (sed)
git commit -qam "linear decay floor min_lr 0 -> 1e-5: decaying to 0 leaves the last ~100 of 700 steps at lr < 9e-6, nearly idle; a floor keeps them learning while the end stays annealed"
uptime
uv run run.py --description "linear decay floor min_lr 0 -> 1e-5: decaying to 0 leaves the last ~100 of 700 steps at lr < 9e-6, nearly idle; a floor keeps them learning while the end stays annealed" > run.log 2>&1
cp run.log logs/20261127-042043-86c1510.log
git reset --hard HEAD~1
uv run autorl mark discard --lesson "min_lr floor 1e-5 on the linear decay: +0.004 (p 0.35, 6 seeds), seeds_needed >64: the near-idle last steps are not a loss; decay to 0 is as good"
uptime
uv run autorl confirm > confirm.log 2>&1
cp confirm.log logs/confirm-20261127-042846-6ae45a0.log
uv run autorl report --help
uv run autorl report --out progress.png --md report.md > report.stdout 2>&1
uv run autorl status > status.txt 2>&1
git diff bc02282 -- train.toml > llm.diff
# wrap-up done
