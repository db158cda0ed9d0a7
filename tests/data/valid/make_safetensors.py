"""Regenerate the tiny .safetensors files that the spec tests read (they are committed as binaries).

    python tests/data/valid/make_safetensors.py

Values are deterministic (no RNG), so rerunning gives the same bytes. Keep every tensor tiny.
"""

from pathlib import Path

import torch
from safetensors.torch import save_file as _save_file

DATA = Path(__file__).resolve().parent.parent  # tests/data


def save_file(tensors: dict, path: str) -> None:
    _save_file(tensors, path)
    Path(path).chmod(0o644)  # safetensors writes 0600; keep the committed files readable


def main() -> None:
    # valid/problem_with_reference_file: input w, float32 [H_q=4, D=8]
    w = (torch.arange(32, dtype=torch.float32).reshape(4, 8) - 16) / 8
    save_file({"w": w}, str(DATA / "valid/problem_with_reference_file/weights.safetensors"))

    # flashinfer_trace: rmsnorm_h8 blobs, referenced by paths relative to the trace folder root
    blob = DATA / "flashinfer_trace/blob/workloads/rmsnorm/rmsnorm_h8"
    blob.mkdir(parents=True, exist_ok=True)
    weight = (1 + torch.arange(8, dtype=torch.float32) / 16).to(torch.bfloat16)
    save_file({"weight": weight}, str(blob / "rmsnorm_h8_weight.safetensors"))
    hidden = ((torch.arange(16, dtype=torch.float32).reshape(2, 8) - 8) / 4).to(torch.bfloat16)
    save_file({"hidden_states": hidden, "weight": weight}, str(blob / "rmsnorm_h8_b2.safetensors"))


if __name__ == "__main__":
    main()
