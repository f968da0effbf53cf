"""autorl-reverse: procedural string reversal as a verifiers v1 taskset.

``core`` (no verifiers import) holds the problems and the reward; ``taskset`` wraps it for prime-rl.
The Taskset class is imported lazily, so ``import autorl_reverse.core`` never pays for verifiers.
"""

__all__ = ["ReverseTaskset"]


def __getattr__(name: str):
    # verifiers resolves the taskset with getattr(module, name) for each name in __all__.
    if name == "ReverseTaskset":
        from autorl_reverse.taskset import ReverseTaskset

        return ReverseTaskset
    raise AttributeError(f"module 'autorl_reverse' has no attribute {name!r}")
