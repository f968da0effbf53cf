"""The LLM track: train.toml (prime-rl schema), environments, the fixed eval, the base model, backends."""
