"""Evaluation: trusted orchestrator, untrusted worker, builders, correctness, timing (issue 4)."""
