"""The catalogue tools of a problem set (`solbench dataset characterise | stats | sample`).

- characterise.py: a typed row per problem (row.ProblemRow: category, model domain, precision and
  fp8/fp4 flags, direction, SOL FLOPs / bytes / arithmetic intensity and compute- or memory-bound on
  a hardware spec, single op or fusion, custom inputs, data-dependent ops, workload and var-axis
  counts, source model, graph fingerprint) into an index file; analyse.py makes one row.
- rules.py: the keyword rules behind category, domain and direction.
- fingerprint.py: graph equivalence up to names and constants.
- stats.py, plot.py: counts, shares, coverage targets and the SVG figure.
- sample.py, copy.py: de-duplication, stratified sampling with target shares, and the copy.
"""

from solbench.dataset.catalog.characterise import characterise, index_for, read_index, write_index
from solbench.dataset.catalog.row import Index, ProblemRow, SolFacts

__all__ = ["Index", "ProblemRow", "SolFacts", "characterise", "index_for", "read_index", "write_index"]
