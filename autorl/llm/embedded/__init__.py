"""The embedded backend: a one-process GRPO trainer with prime-rl's semantics (torch + transformers).

``EmbeddedBackend`` turns a validated ``train.toml`` (prime-rl ``rl`` schema, see autorl.llm.config) into a
``RunSpec`` (the flat, fully resolved settings the child runs with, written as ``resolved.json``), starts
``python -m autorl.llm.embedded.train``, and afterwards picks the latest complete weights.

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
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from autorl import paths
from autorl.backend import WHOLE_MACHINE, Backend, Launch, Slot, TrainOutcome

PRIME_RL_ONLY = "supported on the prime-rl backend only"
COMPLETE_MARKER = "STABLE"  # written last into a weights dir (prime-rl's broadcast convention)


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OptimSpec(_Spec):
    lr: float = 1e-6
    weight_decay: float = 0.01
    max_norm: float | None = 1.0
    betas1: float = 0.9
    betas2: float = 0.999


class SchedulerSpec(_Spec):
    type: str = "constant"
    warmup_steps: int = 10
    decay_steps: int = 10
    min_lr: float = 0.0


class LossSpec(_Spec):
    type: str = "default"
    dppo_mask_low: float = 0.2
    dppo_mask_high: float = 0.2
    adv_tau: float = 1.0
    kl_tau: float = 1e-3
    ipo_threshold: float = 0.1


class LengthPenaltySpec(_Spec):
    num_output_tokens_weight: float = 0.25
    num_input_tokens_weight: float = 0.1
    num_turns_weight: float = 0.1


class SourceSpec(_Spec):
    name: str
    ratio: float = 1.0
    group_size: int = 1
    temperature: float = 1.0
    max_completion_tokens: int | None = None
    taskset_id: str
    taskset_fields: dict[str, Any] = Field(default_factory=dict)


class RunSpec(_Spec):
    """What the training child runs with (``resolved.json``): prime-rl's keys, resolved and flattened."""

    model_path: str
    max_steps: int | None = None
    seq_len: int = 2048
    batch_size: int = 128
    max_off_policy_steps: int = 8
    filter_zero_advantages: bool = True
    optim: OptimSpec = Field(default_factory=OptimSpec)
    scheduler: SchedulerSpec = Field(default_factory=SchedulerSpec)
    loss: LossSpec = Field(default_factory=LossSpec)
    length_penalty: LengthPenaltySpec | None = None
    sources: list[SourceSpec]
    # Embedded-only runtime settings (no prime-rl key; not set from train.toml):
    device: str = "auto"  # auto = cuda when available, else cpu
    num_threads: int = 0  # torch CPU threads; 0 = auto (train.cpu_threads: 1 for a tiny model, else all)
    # auto = vllm when importable on a GPU; on a CPU with 2+ cores, a 1-thread trainer and the one-step lag,
    # hf-process (sampling overlapped with training in a second process, sampler_process.py); else hf.
    sampler: Literal["auto", "hf", "hf-process", "vllm"] = "auto"
    save_interval_s: float = 30.0  # periodic weight saves (plus one at SIGTERM and at max_steps)
    micro_batch_tokens: int = 0  # trainer forward/backward chunks (tokens); 0 = 16384 on CPU, 4096 on GPU
    vllm_gpu_memory_utilization: float = 0.3


def _get(obj: Any, dotted_key: str, default: Any = None) -> Any:
    """obj.a.b.c for pydantic models or dicts; default when any part is missing or None."""
    for part in dotted_key.split("."):
        if obj is None:
            return default
        obj = obj.get(part) if isinstance(obj, dict) else getattr(obj, part, None)
    return default if obj is None else obj


def _as_dict(obj: Any) -> dict[str, Any]:
    if obj is None:
        return {}
    if isinstance(obj, dict):
        return dict(obj)
    if isinstance(obj, BaseModel):
        return obj.model_dump(exclude_none=True)
    return dict(vars(obj))


def _none_str(value: Any) -> Any:
    return None if isinstance(value, str) and value == "None" else value


def _max_norm(optim: Any) -> float | None:
    """prime-rl's default is 1.0; None (written "None" in TOML) disables clipping."""
    if optim is None:
        return 1.0
    raw = optim.get("max_norm", 1.0) if isinstance(optim, dict) else optim.max_norm
    return None if raw is None or raw == "None" else float(raw)


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


def build_spec(cfg: Any) -> RunSpec:
    """RunSpec from a LoadedConfig (or anything with ``.model`` shaped like prime-rl's rl config)."""
    m = cfg.model
    orch = _get(m, "orchestrator")
    train = _get(orch, "train")
    default_group = int(_get(orch, "group_size", 1))
    default_temp = float(_get(train, "sampling.temperature", 1.0))
    default_max_tokens = _none_str(_get(train, "sampling.max_completion_tokens"))
    sources = []
    for i, src in enumerate(_get(train, "source", []) or []):
        taskset = _as_dict(_get(src, "env.taskset"))
        taskset_id = taskset.pop("id", None)
        sampling = _get(src, "sampling")
        temp = _get(sampling, "temperature")
        max_tokens = _none_str(_get(sampling, "max_completion_tokens"))
        sources.append(
            SourceSpec(
                name=_get(src, "name") or taskset_id or f"source{i}",
                ratio=float(_get(src, "ratio", 1.0)),
                group_size=int(_get(src, "group_size") or default_group),
                temperature=float(default_temp if temp is None else temp),
                max_completion_tokens=default_max_tokens if max_tokens is None else int(max_tokens),
                taskset_id=str(taskset_id),
                taskset_fields=taskset,
            )
        )
    lp = _get(orch, "algo.length_penalty")
    length_penalty = None
    if lp is not None:
        lp_fields = {k: v for k, v in _as_dict(lp).items() if k in LengthPenaltySpec.model_fields}
        length_penalty = LengthPenaltySpec(**lp_fields)
    optim = _get(m, "trainer.optim")
    sched = _get(m, "trainer.scheduler")
    loss = _get(m, "trainer.loss")
    max_steps = _none_str(_get(m, "max_steps"))
    return RunSpec(
        model_path=resolve_model_path(str(_get(m, "model.name"))),
        max_steps=None if max_steps is None else int(max_steps),
        seq_len=int(_get(m, "seq_len", 2048)),
        batch_size=int(_get(orch, "batch_size", 128)),
        max_off_policy_steps=int(_get(orch, "max_off_policy_steps", 8)),
        filter_zero_advantages=bool(_get(train, "filter_zero_advantages", True)),
        optim=OptimSpec(
            lr=float(_get(optim, "lr", 1e-6)),
            weight_decay=float(_get(optim, "weight_decay", 0.01)),
            max_norm=_max_norm(optim),
            betas1=float(_get(optim, "betas1", 0.9)),
            betas2=float(_get(optim, "betas2", 0.999)),
        ),
        scheduler=SchedulerSpec(
            type=str(_get(sched, "type", "constant")),
            warmup_steps=int(_get(sched, "warmup_steps", 10)),
            decay_steps=int(_get(sched, "decay_steps", 10)),
            min_lr=float(_get(sched, "min_lr", 0.0)),
        ),
        loss=LossSpec(
            type=str(_get(loss, "type", "default")),
            dppo_mask_low=float(_get(loss, "dppo_mask_low", 0.2)),
            dppo_mask_high=float(_get(loss, "dppo_mask_high", 0.2)),
            adv_tau=float(_get(loss, "adv_tau", 1.0)),
            kl_tau=float(_get(loss, "kl_tau", 1e-3)),
            ipo_threshold=float(_get(loss, "ipo_threshold", 0.1)),
        ),
        length_penalty=length_penalty,
        sources=sources,
    )


def semantic_problems(spec: RunSpec) -> tuple[list[str], list[str]]:
    """(errors, warnings) about a spec the trainer would run badly or not at all."""
    from autorl.llm.embedded.scheduler import check_scheduler

    errors: list[str] = []
    notes: list[str] = []
    if not spec.sources:
        errors.append("`orchestrator.train.source` needs at least one [[orchestrator.train.source]]")
    if spec.loss.type not in ("default", "ipo"):
        errors.append(f"`trainer.loss.type` = {spec.loss.type!r} is {PRIME_RL_ONLY}")
    problem = check_scheduler(
        spec.scheduler.type, spec.scheduler.warmup_steps, spec.scheduler.decay_steps, spec.max_steps
    )
    if problem:
        errors.append(f"`trainer.scheduler`: {problem}")
    known = _known_tasksets()
    for i, src in enumerate(spec.sources):
        key = f"orchestrator.train.source.{i}"
        if known is not None and src.taskset_id not in known:
            errors.append(
                f"`{key}.env.taskset.id` = {src.taskset_id!r} is not an autorl environment "
                f"(known: {', '.join(sorted(known))})"
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
        if spec.batch_size % src.group_size:
            errors.append(
                f"`orchestrator.batch_size` ({spec.batch_size}) must be divisible by {key} group_size "
                f"({src.group_size})"
            )
        if src.max_completion_tokens is not None and src.max_completion_tokens < 1:
            errors.append(f"`{key}` max_completion_tokens must be >= 1")
    return errors, notes


def _known_tasksets() -> set[str] | None:
    try:
        from autorl.llm import envs
    except ImportError:
        return None
    for attr in ("TASKSETS", "ENVIRONMENTS", "KNOWN_TASKSETS"):
        registry = getattr(envs, attr, None)
        if registry:
            return set(registry)
    known = getattr(envs, "known_tasksets", None)
    return set(known()) if callable(known) else None


def latest_weights(run_dir: Path) -> Path | None:
    """The newest complete weights: ``weights/``, or ``weights.old/`` when a save was cut mid-rename."""
    for name in ("weights", "weights.old"):
        candidate = Path(run_dir) / name
        if (candidate / COMPLETE_MARKER).is_file():
            return candidate
    return None


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    rows = []
    path = Path(run_dir) / "metrics.jsonl"
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by SIGKILL
    return rows


class EmbeddedBackend(Backend):
    """The Backend protocol (autorl/backend.py) for the one-process trainer."""

    name = "embedded"

    def check(self, cfg: Any) -> None:
        from autorl.tomlcheck import ConfigError

        errors, notes = semantic_problems(build_spec(cfg))
        for note in notes:
            warnings.warn(note, stacklevel=2)
        if errors:
            raise ConfigError("\n".join(f"{Path(str(cfg.path)).name}: {e}" for e in errors))

    def resolve(self, cfg: Any, run_dir: Path, seed: int) -> dict[str, Any]:
        return build_spec(cfg).model_dump()

    def launch(self, cfg: Any, run_dir: Path, seed: int, slot: Slot = WHOLE_MACHINE) -> Launch:
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        resolved = run_dir / "resolved.json"
        resolved.write_text(json.dumps(self.resolve(cfg, run_dir, seed), indent=2) + "\n")
        argv = [
            sys.executable,
            "-m",
            "autorl.llm.embedded.train",
            "--config",
            str(resolved),
            "--run-dir",
            str(run_dir),
            "--seed",
            str(seed),
        ]
        # PASSIVE: idle OpenMP threads sleep instead of spinning, so a busy neighbour on a small CPU does not
        # stall every op (tiny matmul, 2 threads, loaded 2-core box: 4.5 ms spinning, 36 us passive).
        env = {"OMP_WAIT_POLICY": "PASSIVE", "TOKENIZERS_PARALLELISM": "false"}
        return Launch(argv=argv, cwd=paths.repo_root(), env=env)

    def collect(self, cfg: Any, run_dir: Path) -> TrainOutcome:
        rows = read_metrics(run_dir)
        weights = latest_weights(run_dir)
        notes = []
        if weights is not None:
            info = json.loads((weights / COMPLETE_MARKER).read_text() or "{}")
            notes.append(f"weights: {weights} (step {info.get('step', '?')})")
        peaks = [r["peak_memory_gb"] for r in rows if isinstance(r.get("peak_memory_gb"), (int, float))]
        return TrainOutcome(
            weights_dir=weights,
            steps=max((int(r.get("step", 0)) for r in rows), default=0),
            peak_memory_gb=max(peaks) if peaks else None,
            failed_component=None,
            notes=notes,
        )

    def eval_command(self, cfg: Any, weights_dir: Path | None, out_path: Path, split: str = "eval") -> Launch:
        weights = str(weights_dir) if weights_dir is not None else build_spec(cfg).model_path
        argv = [sys.executable, "-m", "autorl.llm.eval", "--weights", weights, "--out", str(out_path)]
        argv += ["--split", split] if split != "eval" else []  # the default split: the command unchanged
        env = {"OMP_WAIT_POLICY": "PASSIVE", "TOKENIZERS_PARALLELISM": "false"}
        return Launch(argv=argv, cwd=paths.repo_root(), env=env)
