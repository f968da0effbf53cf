"""After a prime-rl run: the latest complete weights, made into an evaluable Hugging Face directory.

prime-rl's filesystem broadcast writes `broadcasts/step_N/` (safetensors shards, then `STABLE`) every step;
its broadcast holds only the shards, so the base model's config and tokenizer files are added.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from autorl.llm.primerl.render import local_model_dir

WEIGHTS_SUBDIR = "weights"  # the assembled HF directory the eval reads
# Files the eval needs besides the weights: prime-rl's broadcast directory holds only safetensors shards.
BASE_MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
    "added_tokens.json",
    "chat_template.jinja",
)


def latest_stable_broadcast(run_dir: Path) -> tuple[int, Path] | None:
    """The highest `broadcasts/step_N` that holds `STABLE` (written last); a directory without it is a
    broadcast cut short by the stop and is skipped."""
    broadcasts = Path(run_dir) / "broadcasts"
    found = []
    if broadcasts.is_dir():
        for d in broadcasts.iterdir():
            m = re.fullmatch(r"step_(\d+)", d.name)
            if m and d.is_dir() and (d / "STABLE").is_file():
                found.append((int(m.group(1)), d))
    return max(found, default=None)


def assemble_weights(broadcast: Path, base_model: Path | None, dest: Path) -> list[str]:
    """An evaluable HF directory: the broadcast's safetensors (+ index) and the base model's config and
    tokenizer files. Hard links where possible (same filesystem), else copies. Returns notes."""
    notes = []
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for f in sorted(broadcast.iterdir()):
        if f.is_file() and (f.suffix == ".safetensors" or f.name.endswith(".safetensors.index.json")):
            _link_or_copy(f, dest / f.name)
    if base_model is None or not base_model.is_dir():
        notes.append(f"base model directory unknown: {dest} has weights but no config/tokenizer files")
        return notes
    for name in BASE_MODEL_FILES:
        if (base_model / name).is_file():
            _link_or_copy(base_model / name, dest / name)
    if not (dest / "config.json").exists():
        notes.append(f"{base_model} has no config.json: {dest} may not load")
    return notes


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def base_model_dir(model_name: str | None) -> Path | None:
    """Where the base model's files are: a local path, the machine file's prepared copy, or the HF cache."""
    local = local_model_dir(model_name)
    if local is not None:
        return local
    from autorl.io.machine import load_machine

    machine = load_machine()
    if machine and machine.model_path and machine.model_name == model_name:
        return Path(machine.model_path)
    if model_name:
        try:
            from huggingface_hub import snapshot_download

            return Path(snapshot_download(repo_id=model_name, local_files_only=True))
        except Exception:  # not cached / not installed: the caller notes the missing files
            return None
    return None
