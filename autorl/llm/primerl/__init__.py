"""The prime-rl backend: prime-rl's own `rl` launcher runs each seed (vLLM and the trainer)."""
