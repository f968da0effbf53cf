"""The record: the ledger row model and results.tsv, the research context (what makes trials comparable),
the side tables, the statistics (score, noise floor, comparison, verdict, early stop) and the one builder of
a trial's summary and row. Imports only autorl.io."""
