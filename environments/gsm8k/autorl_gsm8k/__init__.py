"""autorl-gsm8k: GSM8K (hub or local file) as a verifiers v1 taskset, with an in-process math-verify reward.

``core`` (no verifiers import) holds the data loading and the reward; ``taskset`` wraps it for prime-rl.
The Taskset class is imported lazily, so ``import autorl_gsm8k.core`` never pays for verifiers.
"""

__all__ = ["GSM8KTaskset"]


def __getattr__(name: str):
    # verifiers resolves the taskset with getattr(module, name) for each name in __all__.
    if name == "GSM8KTaskset":
        from autorl_gsm8k.taskset import GSM8KTaskset

        return GSM8KTaskset
    raise AttributeError(f"module 'autorl_gsm8k' has no attribute {name!r}")
