"""SOL score, aggregation and baselines."""
