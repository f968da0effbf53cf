"""The record, floor 1: the ledger row model and results.tsv, the research context (what makes trials
comparable, and the reference), the side tables, the statistics (score, noise floor, comparison, verdict,
early stop, power) and a run directory read back (views and health flags). Imports only autorl.io."""
