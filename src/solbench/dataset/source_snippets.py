"""Source text that generated references inline (a reference stands alone: it imports torch, never
solbench), shared by the generators that need it: the synthetic set and `solbench dataset extract`."""

# nvfp4: each byte packs two e2m1 codes (low nibble first: sign bit 3, then the magnitudes 0, 0.5, 1,
# 1.5, 2, 3, 4, 6); each run of 16 values shares an fp8 e4m3 scale.
NVFP4_DECODE = """
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def dequant_nvfp4(packed, scales):
    table = torch.tensor(E2M1, dtype=torch.float32, device=packed.device)
    raw = packed.view(torch.uint8)
    codes = torch.stack((raw & 0xF, raw >> 4), dim=-1).flatten(-2)
    values = table[codes.long()]
    rows, cols = values.shape
    return (values.view(rows, cols // 16, 16) * scales.to(torch.float32)[..., None]).view(rows, cols)
"""
