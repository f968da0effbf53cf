"""The embedded backend: one-process GRPO trainer children (backend.py: the backend and its run spec;
train.py: the child; batches, grpo, generation, sampler_process, scheduler, slots: its parts)."""
