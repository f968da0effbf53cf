"""Training backends: each turns a validated config into a training child and an eval command."""
