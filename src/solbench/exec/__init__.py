"""Where evaluations run: a local pool over one host's GPUs, or a Ray cluster."""
