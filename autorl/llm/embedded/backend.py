"""The embedded backend: a one-process GRPO trainer with prime-rl's semantics (torch + transformers).

``EmbeddedBackend`` turns the validated ``train.toml`` (``TrainConfig``, prime-rl's ``rl`` schema in
autorl.llm.schema) into a ``RunSpec`` (the flat, fully resolved settings the child runs with; the runner
writes it as ``resolved.json``), starts ``python -m autorl.llm.embedded.train`` on the seed's slot of the
machine (slots.py), and afterwards picks the latest complete weights.

Key by key (prime-rl 559b447 sources in brackets; details in docs/embedded.md and the modules named):

- ``model.name`` -> ``model_path``: a local HF directory (relative paths are resolved against the repo
  root) or a hub id already in the local HF cache.
- ``max_steps`` (None = until the budget stops us), ``seq_len`` (prompt + completion longer than this is
  truncated; the cut tokens leave the loss).
- ``[trainer.optim]`` lr, weight_decay, max_norm ("None" = no clipping), betas1, betas2 -> one
  ``torch.optim.AdamW`` step per trainer step after ``clip_grad_norm_``
  [src/prime_rl/trainer/optim/__init__.py, src/prime_rl/trainer/rl/train.py].
- ``[trainer.scheduler]`` -> scheduler.py [src/prime_rl/trainer/scheduler.py].
- ``[trainer.loss]`` default (dppo_mask_low/high, adv_tau, kl_tau) and ipo (ipo_threshold) -> grpo.py
  [src/prime_rl/trainer/rl/loss.py].
- ``[orchestrator]`` batch_size (rollouts per step), group_size (rollouts per task; per-source override),
  max_off_policy_steps (0 = strictly on-policy, >= 1 = prime-rl's one-step pipeline lag, see train.py)
  [src/prime_rl/orchestrator/{orchestrator,train_sink}.py].
- ``[orchestrator.train]`` filter_zero_advantages, ``sampling.{temperature,max_completion_tokens}``,
  ``[[orchestrator.train.source]]`` name, ratio (weighted random choice of a source per task, as
  src/prime_rl/orchestrator/train_source.py), group_size, sampling, env.taskset.id + taskset fields
  -> autorl.llm.envs.load_env.
- ``[orchestrator.algo.length_penalty]`` -> grpo.group_advantages [src/prime_rl/orchestrator/algo/grpo.py].

Anything else prime-rl has is refused by autorl.llm.config (for the embedded backend) or by ``check`` below.
"""

from __future__ import annotations

import json
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from autorl.engine.backend import WHOLE_MACHINE, Backend, ChildArgs, Collected, Launch, Slot, Snapshot
from autorl.io import paths
from autorl.io.cliargs import flag
from autorl.io.jsonl import read_jsonl
from autorl.llm.embedded.slots import (
    SMALL_MODEL_PARAMS,
    VLLM_GPU_FRACTION,
    plan_slots,
    read_param_count,
    read_vocab_size,
)
from autorl.llm.schema import (
    GRPOAlgo,
    LengthPenalty,
    LossConfig,
    OptimConfig,
    SchedulerConfig,
    TrainConfig,
    TrainerModelConfig,
)

if TYPE_CHECKING:
    from autorl.io.machine import Machine
    from autorl.llm.config import LoadedConfig

# What the training and eval children import, once per trial in a warm starter (autorl/engine/warm.py): torch,
# the torch._dynamo its optimizer pulls in, transformers and the shipped tiny model's architecture (another
# architecture's module is imported by its children).
WARM = (
    "torch",
    "torch._dynamo",
    "transformers",
    "transformers.models.qwen2.modeling_qwen2",
    "autorl.llm.embedded.train",
    "autorl.llm.eval",
)
COMPLETE_MARKER = "STABLE"  # written last into a weights dir (prime-rl's broadcast convention)
# A launch's Prewarm (below) as JSON, in its environment, and the entry its warm starter calls after its
# imports: the trainer's steps compiled once in the starter, for every seed it forks (prewarm.py).
PREWARM_ENV = "AUTORL_PREWARM"
PREWARM_ENTRY = "autorl.llm.embedded.prewarm:run"


class SourceSpec(BaseModel):
    """One ``[[orchestrator.train.source]]`` with what it inherits from the orchestrator filled in."""

    model_config = ConfigDict(extra="forbid")

    name: str
    ratio: float
    group_size: int
    temperature: float
    max_completion_tokens: int | None
    taskset_id: str
    taskset_fields: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class EmbeddedChildArgs(ChildArgs):
    """The trainer child's flags: a training child's, and the seed's share of the machine (its Slot)."""

    threads: int | None = flag(None, "torch CPU threads (default: the config's num_threads)", type=int)
    gpu_share: float | None = flag(None, "fraction of the GPU's memory this seed may use", type=float)


class RunSpec(BaseModel):
    """What the training child runs with (``resolved.json``): prime-rl's keys, resolved and flattened.

    The prime-rl settings have no defaults here: ``build_spec`` fills every one from the validated
    ``TrainConfig``, whose defaults are prime-rl's (autorl.llm.schema).
    """

    model_config = ConfigDict(extra="forbid")

    model_path: str
    max_steps: int | None
    seq_len: int
    batch_size: int
    max_off_policy_steps: int
    filter_zero_advantages: bool
    optim: OptimConfig
    scheduler: SchedulerConfig
    loss: LossConfig
    length_penalty: LengthPenalty | None
    sources: list[SourceSpec]
    # Checkpoint every N-th decoder layer's activations: train.toml's `trainer.model.ac.freq` where it sets
    # [trainer.model.ac], 0 where it sets ac = "None"; None (unset) = slots.checkpoint_every's default.
    activation_checkpointing: int | None = None
    # Embedded-only runtime settings (no prime-rl key; not set from train.toml):
    device: str = "auto"  # auto = cuda when available, else cpu
    # torch CPU threads; 0 = auto (policy.cpu_threads: 1 for a tiny model, else all). The seed's
    # Slot.threads replaces it (EmbeddedBackend.launch passes train.py --threads).
    num_threads: int = 0
    # auto = vllm when importable on a GPU, else hf-graphs; on a CPU with 2+ cores, a 1-thread trainer and
    # the one-step lag, hf-static-process (sampling overlapped with training in a second process,
    # sampler_process.py, its step compiled there); on one core hf-static; else hf (Trainer._sampler_name;
    # the measurements: docs/verified.md). hf-static / hf-graphs: StaticSampler with its decode step
    # compiled (dynamic shapes) / captured as CUDA graphs (static_sampler.py), before `ready` (start-up: the
    # trainer's header says how long); hf-process: HFSampler in the second process, eager.
    sampler: Literal["auto", "hf", "hf-process", "hf-static-process", "hf-static", "hf-graphs", "vllm"] = (
        "auto"
    )
    # The training step's decoder under torch.compile, compiled before `ready` (compiled_train.py). auto = on
    # beside a compiled sampler on a CPU for a model under SMALL_MODEL_PARAMS (cpu_compiles_train):
    # hf-static-process (the 2-core default; in 90 s trials both steps compiled trained 1.28-1.36x
    # hf-process's steps) and hf-static (one core: 1.04-1.09x the steps). On a CPU machine the warm starter
    # compiles both once (prewarm.py; without it, as with AUTORL_WARM=0, each seed compiles them: on one core
    # 0.98-1.09x the steps per wall second; docs/verified.md); beside HFSampler it gains nothing.
    compile_train: bool | Literal["auto"] = "auto"
    save_interval_s: float = 30.0  # periodic weight saves (plus one at SIGTERM and at max_steps)
    # Training seconds at which a copy of the weights is also kept, in snapshots/at-<s>s/ (`autorl fidelity`'s
    # long seeds: evaluated after the run, the score along it; LoadedConfig.snapshot_s). The save is not
    # charged to the budget (a `pause`/`resume` around it).
    snapshot_s: list[float] = []
    # The trial's rungs, (fraction of the budget, training seconds) each (autorl/record/rungs.py;
    # LoadedConfig.rungs): at each the trainer pauses, keeps its weights in snapshots/rung-<k>/ for the runner
    # to score, and waits for the runner's word to go on (a SIGTERM instead: the early abort).
    rungs: list[tuple[float, float]] = []
    micro_batch_tokens: int = 0  # trainer forward/backward chunks (tokens); 0 = slots.py's CPU/GPU default
    vllm_gpu_memory_utilization: float = VLLM_GPU_FRACTION  # of the seed's GPU memory (gpu_share below)
    # Fraction of the GPU's memory this seed may use: the seed's Slot.gpu_share when k seeds share a GPU
    # (EmbeddedBackend.launch passes train.py --gpu-share).
    gpu_share: float = 1.0


class Prewarm(BaseModel):
    """What a warm starter compiles once for every seed on a CPU (prewarm.py): the steps a one-thread CPU seed
    of this model compiles, as far as a compile depends on the config. It is part of the starter's key (the
    launch's environment): an edit that changes none of it keeps the starter and its compiles."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model_path: str  # RunSpec.model_path
    activation_checkpointing: int | None  # RunSpec's: the layers checkpointed shape the training graph
    sampler: bool  # the sampler's decode step (cpu_sampler's choice is one of COMPILED_SAMPLERS)
    train: bool  # the training step's decoder (cpu_compiles_train)


COMPILED_SAMPLERS = ("hf-static", "hf-static-process")  # the CPU samplers whose decode step compiles


def cpu_sampler(setting: str, lag: int, threads: int, cores: int) -> str:
    """The sampler a CPU seed runs: `setting`, or for `auto` hf-static-process with a one-thread trainer one
    step behind (`lag` 1) and a second core (sampling overlapped with training in a second process,
    sampler_process.py, its step compiled there), hf-static on one core (its step compiled: 1.17x the
    trainer's samples/s there), else hf. The measurements: docs/verified.md."""
    if setting != "auto":
        return setting
    if lag == 1 and threads == 1 and cores >= 2:
        return "hf-static-process"
    return "hf-static" if cores == 1 else "hf"


def cpu_compiles_train(setting: bool | Literal["auto"], sampler: str, n_params: int) -> bool:
    """Whether a CPU seed compiles its training step: `setting`, or for `auto` beside a compiled sampler for
    a model under SMALL_MODEL_PARAMS (the measured kind: RunSpec.compile_train)."""
    if setting != "auto":
        return setting
    return sampler in COMPILED_SAMPLERS and n_params < SMALL_MODEL_PARAMS


def planned_prewarm(spec: RunSpec) -> Prewarm | None:
    """The Prewarm of `spec`'s launches: what a seed of it compiles on this CPU machine (cpu_sampler and
    cpu_compiles_train, the trainer's own rules, for the machine's cores: every slot of a small model has one
    core, or two and more), or None where it compiles nothing: a machine with a GPU or none prepared, a model
    of SMALL_MODEL_PARAMS or more (it trains on every core), more threads asked for. The same for every launch
    of a trial (training and eval): one starter."""
    from autorl.io.machine import cpu_ids, load_machine

    machine = load_machine()
    if machine is None or machine.gpus or spec.device not in ("auto", "cpu") or spec.num_threads > 1:
        return None
    n_params = read_param_count(spec.model_path)
    if n_params is None or n_params >= SMALL_MODEL_PARAMS:
        return None
    lag = 1 if spec.max_off_policy_steps >= 1 else 0
    sampler = cpu_sampler(spec.sampler, lag, 1, len(cpu_ids(machine)))
    train = cpu_compiles_train(spec.compile_train, sampler, n_params)
    if sampler not in COMPILED_SAMPLERS and not train:
        return None
    return Prewarm(
        model_path=spec.model_path,
        activation_checkpointing=spec.activation_checkpointing,
        sampler=sampler in COMPILED_SAMPLERS,
        train=train,
    )


def resolve_model_path(name: str) -> str:
    """A local directory: the path itself (absolute, or relative to the repo root), or for a hub id its
    snapshot in the local Hugging Face cache (prepare.py downloads it), so the child never needs the
    network. A hub id that is not cached is returned as given."""
    candidate = Path(name).expanduser()
    if not candidate.is_absolute():
        candidate = paths.repo_root() / candidate
    if candidate.exists() or name.startswith((".", "/", "~")):
        return str(candidate.resolve())
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(repo_id=name, local_files_only=True)
    except Exception:  # not cached (or not a valid repo id): from_pretrained will say what is wrong
        return name


def build_spec(cfg: TrainConfig) -> RunSpec:
    """RunSpec from the validated train.toml (``LoadedConfig.model``)."""
    orch = cfg.orchestrator
    assert orch.batch_size is not None, "token_batch_size is refused on the embedded backend"
    sources = []
    for src in orch.train.source:
        # The schema already resolved inheritance: group_size from the orchestrator, sampling from the group.
        taskset = src.env.taskset.model_dump(exclude={"id"})
        sources.append(
            SourceSpec(
                name=src.resolved_name,
                ratio=src.ratio,
                group_size=src.group_size,
                temperature=src.sampling.temperature,
                max_completion_tokens=src.sampling.max_completion_tokens,
                taskset_id=src.env.taskset.id,
                taskset_fields=taskset,
            )
        )
    return RunSpec(
        model_path=resolve_model_path(cfg.model.name),
        max_steps=cfg.max_steps,
        seq_len=cfg.seq_len,
        batch_size=orch.batch_size,
        max_off_policy_steps=orch.max_off_policy_steps,
        filter_zero_advantages=orch.train.filter_zero_advantages,
        optim=cfg.trainer.optim,
        scheduler=cfg.trainer.scheduler,
        loss=cfg.trainer.loss,
        # the other algorithms are refused on the embedded backend (autorl.llm.config)
        length_penalty=orch.algo.length_penalty if isinstance(orch.algo, GRPOAlgo) else None,
        sources=sources,
        activation_checkpointing=_checkpoint_freq(cfg.trainer.model),
    )


def _checkpoint_freq(model: TrainerModelConfig) -> int | None:
    """`trainer.model.ac.freq` where train.toml sets [trainer.model.ac] (0 for ac = "None"), else None: the
    schema's default (prime-rl's: every layer) is not the embedded trainer's (slots.checkpoint_every)."""
    if "ac" not in model.model_fields_set:
        return None
    return model.ac.freq if model.ac is not None else 0


def semantic_problems(spec: RunSpec) -> tuple[list[str], list[str]]:
    """(errors, warnings) the embedded trainer adds to the schema's checks (autorl.llm.schema)."""
    from autorl.llm.envs import known_ids, normalize_id

    errors: list[str] = []
    notes: list[str] = []
    for i, src in enumerate(spec.sources):
        key = f"orchestrator.train.source.{i}"
        if normalize_id(src.taskset_id) not in known_ids():
            errors.append(
                f"`{key}.env.taskset.id` = {src.taskset_id!r} is not an autorl environment "
                f"(known: {', '.join(known_ids())}); other tasksets run on the prime-rl backend only"
            )
        if src.temperature <= 0:
            errors.append(
                f"`{key}` sampling temperature must be > 0: the trainer divides the logits by it "
                "(as prime-rl does)"
            )
        if src.group_size == 1:
            notes.append(
                f"`{key}` group_size = 1: every advantage is 0 (reward minus its own mean), "
                "so nothing is learned; use group_size >= 2"
            )
    return errors, notes


def snapshot_dir(run_dir: Path, at_s: float) -> Path:
    """Where the trainer keeps the weights it had when its training clock passed `at_s` seconds."""
    return Path(run_dir) / "snapshots" / f"at-{at_s:g}s"


def saved_snapshots(run_dir: Path) -> list[Snapshot]:
    """The complete snapshots of a run (RunSpec.snapshot_s), earliest first."""
    found = []
    for d in (Path(run_dir) / "snapshots").glob("at-*s"):
        if (d / COMPLETE_MARKER).is_file():
            info = json.loads((d / COMPLETE_MARKER).read_text())
            found.append(Snapshot(float(info["at_s"]), int(info["step"]), d))
    return sorted(found, key=lambda s: s.at_s)


def latest_weights(run_dir: Path) -> Path | None:
    """The newest complete weights: ``weights/``, or ``weights.old/`` when a save was cut mid-rename."""
    for name in ("weights", "weights.old"):
        candidate = Path(run_dir) / name
        if (candidate / COMPLETE_MARKER).is_file():
            return candidate
    return None


class EmbeddedBackend(Backend["LoadedConfig"]):
    """The Backend protocol (autorl/engine/backend.py) for the one-process trainer.

    ``cfg`` is the LoadedConfig of autorl.llm.config; ``cfg.model`` the validated TrainConfig.
    """

    name = "embedded"
    scores_rungs = True

    def check(self, cfg: LoadedConfig) -> None:
        from autorl.io.tomlcheck import ConfigError

        errors, notes = semantic_problems(build_spec(cfg.model))
        for note in notes:
            warnings.warn(note, stacklevel=2)
        if errors:
            raise ConfigError("\n".join(f"{Path(str(cfg.path)).name}: {e}" for e in errors))

    def resolve(
        self, cfg: LoadedConfig, run_dir: Path, seed: int, slot: Slot = WHOLE_MACHINE
    ) -> dict[str, Any]:
        update = {"snapshot_s": list(cfg.snapshot_s), "rungs": [tuple(r) for r in cfg.rungs]}
        return build_spec(cfg.model).model_copy(update=update).model_dump()

    def launch(self, cfg: LoadedConfig, run_dir: Path, seed: int, slot: Slot = WHOLE_MACHINE) -> Launch:
        run_dir = Path(run_dir)
        # resolved.json: written by the runner; the slot's share of the machine on top
        child = EmbeddedChildArgs(run_dir / "resolved.json", run_dir, seed, slot.threads, slot.gpu_share)
        argv = child.argv("autorl.llm.embedded.train")
        return self._launch(cfg, argv, slot)

    def _launch(self, cfg: LoadedConfig, argv: list[str], slot: Slot) -> Launch:
        """A child of this backend, training or eval: the same environment and warm entries for every launch
        of a trial, so that one warm starter serves them all (and compiles the trainer's steps once, where
        planned_prewarm plans it)."""
        # PASSIVE: idle OpenMP threads sleep instead of spinning, so a busy neighbour on a small CPU does not
        # stall every op (tiny matmul, 2 threads, loaded 2-core box: 4.5 ms spinning, 36 us passive).
        env = {"OMP_WAIT_POLICY": "PASSIVE", "TOKENIZERS_PARALLELISM": "false"}
        warm: tuple[str, ...] = WARM
        if slot.gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, slot.gpus))
        elif (prewarm := planned_prewarm(build_spec(cfg.model))) is not None:
            env[PREWARM_ENV] = prewarm.model_dump_json()
            warm = (*WARM, PREWARM_ENTRY)
        return Launch(argv=argv, cwd=paths.repo_root(), env=env, cpus=slot.cpus, warm=warm)

    def collect(self, cfg: LoadedConfig, run_dir: Path) -> Collected:
        rows = read_jsonl(Path(run_dir) / "metrics.jsonl")
        weights = latest_weights(run_dir)
        notes = []
        if weights is not None:
            info = json.loads((weights / COMPLETE_MARKER).read_text() or "{}")
            notes.append(f"weights: {weights} (step {info.get('step', '?')})")
        peaks = [r["peak_memory_gb"] for r in rows if isinstance(r.get("peak_memory_gb"), (int, float))]
        return Collected(
            weights_dir=weights,
            steps=max((int(r.get("step", 0)) for r in rows), default=0),
            peak_memory_gb=max(peaks) if peaks else None,
            failed_component=None,
            notes=notes,
            snapshots=saved_snapshots(run_dir),
        )

    def eval_command(
        self,
        cfg: LoadedConfig,
        weights_dir: Path | None,
        out_path: Path,
        slot: Slot = WHOLE_MACHINE,
        split: str = "eval",
    ) -> Launch:
        weights = str(weights_dir) if weights_dir is not None else resolve_model_path(cfg.model.model.name)
        argv = [sys.executable, "-m", "autorl.llm.eval", "--weights", weights, "--out", str(out_path)]
        argv += ["--split", split] if split != "eval" else []  # the default split: the command unchanged
        return self._launch(cfg, argv, slot)

    def plan_slots(self, cfg: LoadedConfig, machine: Machine) -> list[Slot]:
        model = resolve_model_path(cfg.model.model.name)
        ac_freq = _checkpoint_freq(cfg.model.trainer.model)
        return plan_slots(read_param_count(model), machine, read_vocab_size(model), ac_freq)
