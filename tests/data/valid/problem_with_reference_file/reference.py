import torch


def run(x, w, x_fp8, x_fp4, idx, scale):
    scores = (x * w).sum(-1) * scale  # [B, H_q]
    codes = x_fp4.view(torch.uint8)  # [B, D // 2]: two fp4 codes per byte
    side = x_fp8.float().reshape(x_fp8.shape[0], -1, 2).sum(-1) + (codes & 0xF).float()
    return scores[idx], side


def make_indices(axes, device):
    return {"idx": torch.randint(0, axes["B"], (axes["N"],), device=device)}
