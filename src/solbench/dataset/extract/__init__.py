"""`solbench dataset extract`: problems captured from the transformers modeling code of known models.

`extract(model, modules, backward, out_dir, force)` builds each chosen submodule of the model's layer
from transformers with the model's published config (fake/meta tensors: no weights, nothing big
allocated), captures it with torch.export (the backward with make_fx of torch.autograd.grad) and
writes one problem folder per submodule (and per backward) under out_dir.
"""

from solbench.dataset.extract.api import Extracted, extract, list_models, problem_specs

__all__ = ["Extracted", "extract", "list_models", "problem_specs"]
