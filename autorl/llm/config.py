"""Loading train.toml: prime-rl's schema (autorl.llm.schema) plus the refusals and hints of the harness.

`load_train_config(path, backend, prepared_model) -> LoadedConfig` raises ConfigError naming every problem
(file:line, key, why). `REFUSED` lists the keys the harness owns or that would run code; the keys only the
prime-rl backend runs (`EMBEDDED_UNSUPPORTED`) are refused by name on the embedded backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autorl.io import paths
from autorl.io.tomlcheck import Check, KeyPath, config_hash, dotted, load_toml, match_key, short
from autorl.llm import envs
from autorl.llm.primerl_keys import is_primerl_key
from autorl.llm.schema import ModelConfig, TrainConfig

# ====================================================================================================
# Refusals: harness-owned keys, keys that would run code, keys only the prime-rl backend runs
# ====================================================================================================

_HARNESS = "is owned by the harness"
SOURCE = "orchestrator.train.source.*"
REFUSED: dict[str, str] = {
    # seeds first: at any depth, whatever the table
    "**.seed": "is owned by the harness: seeds are set per trial by run.py (--seeds); changing a seed is "
    "never an experiment",
    "**.output_dir": f"{_HARNESS}: every trial writes into its own run directory (runs/...)",
    "run": f"{_HARNESS}: the run name and directory are set per trial",
    "clean": f"{_HARNESS}: run directories are created fresh per trial",
    "dry_run": f"{_HARNESS}: use `uv run run.py --dry-run`",
    "**.env_vars": f"{_HARNESS}: environment variables can change what code runs; they are not an experiment",
    "deployment": f"{_HARNESS}: GPUs are assigned by the harness (GPU 0 vLLM, GPU 1 trainer)",
    "slurm": f"{_HARNESS}: trials run on the local machine",
    "inference": f"{_HARNESS}: the harness starts and configures vLLM",
    "**.weight_broadcast": f"{_HARNESS}: weights are broadcast to disk so the eval always finds the latest",
    "**.rollout_transport": f"{_HARNESS}: process plumbing between orchestrator and trainer",
    "orchestrator.env_server_base_port": f"{_HARNESS}: ports are assigned per seed (seeds run side by side)",
    "**.monitors": f"{_HARNESS}: metrics go to the run directory's metrics.jsonl",
    "**.ckpt": f"{_HARNESS}: weights are saved by the harness; checkpoints would write outside the run",
    "**.resume": f"{_HARNESS}: every trial starts from the prepared base model",
    "**.log": f"{_HARNESS}: logs go to the run directory",
    "**.tokenizer": f"{_HARNESS}: the tokenizer is the prepared model's",
    "**.heartbeat": f"{_HARNESS}: no external monitoring endpoints",
    "**.metrics_server": f"{_HARNESS}: no network endpoints",
    "trainer.trace_path": f"{_HARNESS}: it writes files outside the run directory",
    "trainer.memory_profiler_path": f"{_HARNESS}: it writes files outside the run directory",
    "trainer.model.conversion_dir": f"{_HARNESS}: it writes files outside the run directory",
    "orchestrator.eval": f"{_HARNESS}: the evaluation is fixed (see eval.toml) so that scores stay "
    "comparable across trials",
    "orchestrator.model": f"{_HARNESS}: the client/base_url of the vLLM server is set by the harness",
    "orchestrator.renderer": f"{_HARNESS}: it picks the renderer that fits the prepared model",
    "trainer.loss.type=custom": "is refused: a custom loss imports and runs arbitrary code (import_path)",
    "trainer.loss.import_path": "is refused: it imports and runs arbitrary code",
    "trainer.loss.kwargs": "is refused: it belongs to the custom loss, which runs arbitrary code",
    "orchestrator.algo.filter": "is refused: echo filters import and run arbitrary code (import_path)",
    "orchestrator.algo.sampling": "is refused: rollouts are sampled from the policy the harness serves",
    "orchestrator.algo.type=opd": "is refused: opd needs an externally hosted teacher (base_url), which the "
    "harness does not provide",
    "orchestrator.algo.type=sft": "is refused: sft needs an externally hosted teacher (base_url), which the "
    "harness does not provide",
    f"{SOURCE}.env.agent": f"{_HARNESS}: the harness/runtime are fixed (harness null, runtime subprocess) so "
    "rollouts run locally with no sandbox or tools",
    f"{SOURCE}.env.taskset.system_prompt": "is refused: it names a file to read; the prompt format "
    "belongs to the environment",
    f"{SOURCE}.env.taskset.task.rewards.*.fn": "is refused: reward functions are import paths (code "
    "execution); the reward belongs to the environment",
    f"{SOURCE}.env.taskset.task.metrics.*.fn": "is refused: metric functions are import paths (code "
    "execution)",
    f"{SOURCE}.env.taskset.task.stops.*.fn": "is refused: stop functions are import paths (code execution)",
    f"{SOURCE}.env.taskset.task.judges": "is refused: judges call external model endpoints",
}

# Accepted keys that only the prime-rl backend runs: the embedded trainer refuses them by name.
EMBEDDED_UNSUPPORTED: tuple[str, ...] = (
    "trainer.model.attn",
    "trainer.model.compile",
    "trainer.model.ac.mode=selective",
    "trainer.model.ac_offloading",
    "trainer.model.fsdp_cpu_offload",
    "trainer.model.optim_cpu_offload",
    "trainer.model.impl",
    "trainer.model.optimization_dtype",
    "trainer.model.reduce_dtype",
    "trainer.model.lora",
    "orchestrator.token_batch_size",
    "orchestrator.algo.type=max_rl",
    "orchestrator.algo.type=rae",
    "orchestrator.algo.type=echo",
    "orchestrator.algo.type=opsd",
    f"{SOURCE}.curriculum",
)
_PRIMERL_ONLY = "is supported on the prime-rl backend only"

# Keys of older prime-rl versions (reference §10) and their HEAD equivalents.
_OLD_KEYS = {
    "rollouts_per_example": "renamed: use `orchestrator.group_size`",
    "inference_gpu_ids": "GPUs are owned by the harness",
    "trainer_gpu_ids": "GPUs are owned by the harness",
    "max_async_level": "gone in prime-rl HEAD; the nearest is `orchestrator.max_off_policy_steps`",
    "token_mask_high": "gone; the nearest is `trainer.loss.dppo_mask_high` (a probability gap, 0.2)",
    "token_mask_low": "gone; the nearest is `trainer.loss.dppo_mask_low` (a probability gap, 0.2)",
    "ratio_type": "gone in prime-rl HEAD (the loss is a global token mean)",
    "teacher_tau": 'gone; on-policy distillation is `orchestrator.algo.type = "opd"` (refused here)',
    "advantage": "gone; the nearest is [orchestrator.algo.length_penalty]",
    "env": "renamed: use [[orchestrator.train.source]] with env.taskset.id",
    "buffer": "gone; use per-source `ratio`",
    "wandb": "metrics monitors are owned by the harness",
}


def _hint(key: str) -> str | None:
    """Explain an unknown key better than a spelling suggestion, where we can."""
    path = key.split(".")
    last = path[-1]
    if path[0] in ("trainer", "orchestrator") and last in ("max_steps", "seq_len", "name") and len(path) <= 3:
        shared = {"max_steps": "max_steps", "seq_len": "seq_len", "name": "model.name"}[last]
        if last != "name" or path[-2] == "model":
            return (
                f"set the shared top-level `{shared}` instead (prime-rl copies it into trainer and "
                "orchestrator)"
            )
    if key == "orchestrator.sampling" or key.startswith("orchestrator.sampling."):
        return "moved: use [orchestrator.train.sampling]"
    if last in _OLD_KEYS and not is_primerl_key(key):
        return _OLD_KEYS[last]
    if is_primerl_key(key):
        return "a prime-rl key that autorl's train.toml does not accept (docs/config.md lists those it does)"
    return None


# ====================================================================================================
# Taskset fields: checked by the environment's own core before anything runs
# ====================================================================================================


# Splits that are scored (eval.toml's eval split, `autorl confirm`'s sealed test split): never trained on.
HELD_OUT_SPLITS = ("eval", "test")


def _tasksets(data: dict) -> list[tuple[KeyPath, dict]]:
    """(key, table) of every [orchestrator.train.source.env.taskset] written in the raw TOML."""
    node: object = data
    for seg in ("orchestrator", "train", "source"):
        node = node.get(seg) if isinstance(node, dict) else None
    found: list[tuple[KeyPath, dict]] = []
    for i, source in enumerate(node if isinstance(node, list) else []):
        env = source.get("env") if isinstance(source, dict) else None
        taskset = env.get("taskset") if isinstance(env, dict) else None
        if isinstance(taskset, dict):
            found.append((("orchestrator", "train", "source", str(i), "env", "taskset"), taskset))
    return found


def data_problems(cfg: LoadedConfig) -> list[str]:
    """One line per training source whose environment can't read its data on this machine now (a missing
    data_path, no hub offline): checked after validation, before anything trains."""
    problems = []
    for (*_, index, _env, _taskset), taskset in _tasksets(cfg.data):
        if envs.core_of(str(taskset.get("id"))) is None:
            continue  # a taskset only prime-rl loads: its own business
        fields = dict(taskset)
        if isinstance(fields.get("data_path"), str):
            fields["data_path"] = str(paths.resolve_data_path(fields["data_path"]))
        source = cfg.model.orchestrator.train.source[int(index)]
        if why := envs.load_env(str(taskset["id"]), fields).data_problem():
            problems.append(f"{cfg.path.name}: source '{source.resolved_name}' ({taskset['id']}): {why}")
    return problems


def check_tasksets(data: dict) -> list[tuple[KeyPath, str]]:
    """Fields of known tasksets through the environment's `settings_from_fields` (types, ranges, names),
    every `*_path` field inside the repo or AUTORL_DATA_DIR (the training child reads it), and no training
    source on a held-out split (HELD_OUT_SPLITS: training on what is scored is not an experiment)."""
    problems: list[tuple[KeyPath, str]] = []
    for where, taskset in _tasksets(data):
        if taskset.get("split") in HELD_OUT_SPLITS:
            problems.append(
                (
                    (*where, "split"),
                    f"`{dotted((*where, 'split'))}` is {taskset['split']!r}: a training source cannot use a "
                    f"held-out split ({', '.join(HELD_OUT_SPLITS)}); the eval and test splits are scored, "
                    'never trained on (use split = "train")',
                )
            )
        fields = {
            name: value
            for name, value in taskset.items()
            if name != "id" and not any(match_key(p.split("=")[0], (*where, name)) for p in REFUSED)
        }
        for name, value in fields.items():
            if name.endswith("_path") and isinstance(value, str):
                resolved = paths.resolve_data_path(value)
                if not any(resolved.is_relative_to(root) for root in paths.data_roots()):
                    problems.append(
                        (
                            (*where, name),
                            f"`{dotted((*where, name))}` resolves to {short(str(resolved))}, outside "
                            f"the repo; put the data inside the repo or under the directory named by the "
                            f"{paths.DATA_DIR_VAR} environment variable",
                        )
                    )
        core = envs.core_of(taskset["id"]) if isinstance(taskset.get("id"), str) else None
        if core is None:
            continue  # a taskset only prime-rl loads: prime-rl checks its fields
        try:
            core.settings_from_fields(fields)
        except ValueError as e:
            field = getattr(e, "field", None)
            key = (*where, field) if isinstance(field, str) and field in taskset else where
            problems.append((key, f"`{short(dotted(key))}`: {getattr(e, 'message', e)}"))
    return problems


# ====================================================================================================
# Loading train.toml
# ====================================================================================================


@dataclass
class LoadedConfig:
    path: Path
    text: str
    data: dict  # the raw TOML, exactly as written
    model: TrainConfig  # validated, with prime-rl's defaults filled in
    config_hash: str
    # training seconds at which the embedded trainer also keeps its weights, evaluated after the run: only
    # `autorl fidelity`'s long seeds set them (LLMTrack.lengthen), never train.toml
    snapshot_s: tuple[float, ...] = ()
    # the trial's rungs, (fraction of the budget, training seconds) each: set by the runner for the seeds it
    # scores along the way (Track.with_rungs), never by train.toml
    rungs: tuple[tuple[float, float], ...] = ()


def load_train_config(
    path: Path, backend: str | None = None, prepared_model: str | None = None
) -> LoadedConfig:
    """Load and validate train.toml; raise ConfigError naming every problem (file:line, key, why).

    backend="embedded" also refuses the keys only prime-rl runs (EMBEDDED_UNSUPPORTED). prepared_model is the
    model prepare.py set up; a different `model.name` is refused (the model is harness-owned once prepared).
    """
    refused = dict(REFUSED)
    if backend == "embedded":
        refused |= {key: _PRIMERL_ONLY for key in EMBEDDED_UNSUPPORTED if key not in refused}
    checks: list[Check] = [check_tasksets]
    if prepared_model is not None:

        def check_model(data: dict) -> list[tuple[KeyPath, str]]:
            table = data.get("model", {})
            if isinstance(table, dict) and "name" not in table:
                default = ModelConfig().name
                return [
                    (
                        ("model",),
                        f"`model.name` is not set, so prime-rl's default '{default}' would be trained, but "
                        f"the prepared model is '{prepared_model}': set `name = \"{prepared_model}\"` under "
                        "[model] (or re-run `uv run prepare.py` to switch models)",
                    )
                ]
            name = table.get("name") if isinstance(table, dict) else None
            if not isinstance(name, str) or name == prepared_model:
                return []
            return [
                (
                    ("model", "name"),
                    f"`model.name` is '{name}' but the prepared model is '{prepared_model}': the model is "
                    "owned by the harness once prepared (base score and data belong to it); re-run "
                    "`uv run prepare.py` to switch models",
                )
            ]

        checks.append(check_model)
    text, data, model = load_toml(Path(path), TrainConfig, refused, hint=_hint, checks=checks)
    assert isinstance(model, TrainConfig)
    return LoadedConfig(path=Path(path), text=text, data=data, model=model, config_hash=config_hash(data))
