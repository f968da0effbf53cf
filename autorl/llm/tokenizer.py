"""The tokenizer and the prompt format that the fixed evaluation and the embedded trainer share: a task prompt
goes through the tokenizer's chat template as a user turn (raw text for a tokenizer without one), as
prime-rl's `renderers` does, and a tokenizer loads exactly as it was saved."""

from __future__ import annotations

import json
from pathlib import Path


def format_prompt(tokenizer, prompt: str) -> str:
    """The model input for a task prompt: the chat template as a user turn when the tokenizer has one,
    else the raw prompt. The embedded trainer renders prompts with this same function."""
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "user", "content": prompt}]
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return prompt


def encode_prompt(tokenizer, prompt: str) -> list[int]:
    """Token ids of a task prompt (``format_prompt``, no special tokens added): the eval's and the embedded
    trainer's."""
    return list(tokenizer(format_prompt(tokenizer, prompt), add_special_tokens=False)["input_ids"])


def load_tokenizer(path: str | Path):
    """The tokenizer as saved: the eval's and the embedded trainer's.

    transformers 5's AutoTokenizer picks the model family's class from config.json (Qwen2Tokenizer for any
    qwen2 model), which re-tokenizes a tokenizer saved as a plain ``tokenizers`` one (tokenizer_class
    ``TokenizersBackend``): a character vocabulary loses its spaces and newlines that way. When
    tokenizer_config.json names the generic backend, load exactly that.
    """
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    config = Path(path) / "tokenizer_config.json"
    if config.is_file():
        saved_class = json.loads(config.read_text()).get("tokenizer_class")
        if saved_class in ("TokenizersBackend", "PreTrainedTokenizerFast"):
            return PreTrainedTokenizerFast.from_pretrained(path)
    return AutoTokenizer.from_pretrained(path)


def eval_tokenizer(weights: Path, base_model: str | None):
    """The tokenizer that evaluates `weights`, left-padded: the one saved with them, else the base model's
    (trainers may save weights without tokenizer files: prime-rl's broadcasts)."""
    has_tokenizer = any((weights / f).exists() for f in ("tokenizer.json", "tokenizer_config.json"))
    source = str(weights) if has_tokenizer or base_model is None else base_model
    tokenizer = load_tokenizer(source)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer
