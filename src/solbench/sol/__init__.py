"""Speed-of-light analysis: op graph capture, op costs, bounds, hardware specs (issue 3)."""
