"""Convolutional families: a ConvNeXt block (depthwise 7x7 conv, LayerNorm, pointwise MLP, layer scale),
a ResNet bottleneck block (1x1 / 3x3 / 1x1 convs, each with its eval-mode BatchNorm, ReLU, identity
shortcut) and a VQGAN encoder ResNet block (GroupNorm, SiLU, 3x3 convs: the VAE-style block of
Chameleon's image tokenizer), all from transformers' own modules in NCHW layout.

The feature map is square: `height` is a var axis and `width` an expression of it (width = height),
the grid's spatial sizes being those of 224, 384 and 512-pixel images at the block's stage. The
Mamba-2 causal depthwise conv1d alone is in ssm.py.
"""

from __future__ import annotations

from typing import Any

from solbench.dataset.extract.recipe import BATCH, HEIGHT, WIDTH, Act, Family, Recipe

# (batch, height): a stage at 1/16 of the image (224 -> 14, 384 -> 24, 512 -> 32), batch 1 to 64
STAGE16_GRID = ((1, 14), (8, 14), (64, 14), (1, 24), (16, 24), (1, 32), (8, 32), (32, 32))
# (batch, height): the first level of a VQGAN encoder, at the image's resolution (256, 384, 512 pixels)
FULL_GRID = ((1, 256), (4, 256), (16, 256), (1, 384), (4, 384), (1, 512), (2, 512), (4, 512))
SQUARE = ((WIDTH, HEIGHT),)  # width = height
POSITIVE = {"kind": "uniform", "low": 0.5, "high": 1.5}  # running variances of a BatchNorm


def _map(channels: str) -> tuple[Act, ...]:
    return (Act("hidden_states", (BATCH, channels, HEIGHT, WIDTH)),)


def _convnext_axes(cfg: Any) -> dict[str, int | tuple[str, int]]:
    dim = cfg.hidden_sizes[2]
    return {"channels": dim, "mlp_dim": ("4 * channels", 4 * dim), "kernel_size": 7}


def convnext_family() -> Family:
    block = Recipe(
        "block", "conv_block", "ConvNeXt block of the third stage (the 27-block one, 1/16 of the image): depthwise 7x7 conv "
        "(padding 3, bias), LayerNorm over the channels (channels-last, eps 1e-6), pwconv1 (Linear to 4x channels), GELU, "
        "pwconv2, layer scale (gamma), residual; NCHW in and out",
        lambda tm, cfg: tm.ConvNextLayer(cfg, dim=cfg.hidden_sizes[2]), lambda tm, cfg, m, x: m(x), _map("channels"),
        grid=STAGE16_GRID, second=HEIGHT, axes=SQUARE)
    return Family("convnext", "ConvNextConfig", _convnext_axes, {"block": block})


def _resnet_axes(cfg: Any) -> dict[str, int | tuple[str, int]]:
    channels = cfg.hidden_sizes[2]
    return {"channels": channels, "reduced_channels": ("channels // 4", channels // 4), "kernel_size": 3}


def resnet_family() -> Family:
    def build(tm: Any, cfg: Any) -> Any:
        channels = cfg.hidden_sizes[2]
        return tm.ResNetBottleNeckLayer(channels, channels, stride=1, activation=cfg.hidden_act,
                                        downsample_in_bottleneck=cfg.downsample_in_bottleneck)

    block = Recipe(
        "bottleneck", "conv_block", "ResNet bottleneck block of the third stage (conv4_x, 1/16 of the image, not its first "
        "block): 1x1 conv to channels/4, 3x3 conv (padding 1), 1x1 conv back, each without bias and followed by its eval-mode "
        "BatchNorm (running statistics as inputs, as the model has them: not folded), ReLU after the first two and after the "
        "identity-shortcut sum; NCHW in and out",
        build, lambda tm, cfg, m, x: m(x), _map("channels"), grid=STAGE16_GRID, second=HEIGHT, axes=SQUARE,
        state_distributions=(("running_var", POSITIVE),))
    return Family("resnet", "ResNetConfig", _resnet_axes, {"bottleneck": block})


def _vqgan_axes(cfg: Any) -> dict[str, int | tuple[str, int]]:
    return {"channels": cfg.base_channels * cfg.channel_multiplier[0], "kernel_size": 3, "num_groups": 32}


def vqgan_family() -> Family:
    def build(tm: Any, cfg: Any) -> Any:
        channels = cfg.base_channels * cfg.channel_multiplier[0]
        return tm.ChameleonVQVAEEncoderResnetBlock(cfg, in_channels=channels, out_channels=channels)

    block = Recipe(
        "resnet_block", "conv_block", "VAE-style ResNet block of the VQGAN image tokenizer's encoder at full resolution (its "
        "first level): GroupNorm (32 groups, eps 1e-6), SiLU, 3x3 conv, GroupNorm, SiLU, 3x3 conv, residual; NCHW in and out",
        build, lambda tm, cfg, m, x: m(x), _map("channels"), grid=FULL_GRID, second=HEIGHT, axes=SQUARE)
    return Family("chameleon", "ChameleonVQVAEConfig", _vqgan_axes, {"resnet_block": block})
