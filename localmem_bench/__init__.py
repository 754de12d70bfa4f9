"""`localmem eval` and `localmem bench`: LoCoMo and LongMemEval scoring, baselines and synthetic
benchmarks, through the public API only."""
