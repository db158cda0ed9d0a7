"""Score bands: the colours that every report view gives a SOL score, cut at the paper's iso-lines
S = 0.5 (the baseline), 0.7 and 0.9."""

from __future__ import annotations

from dataclasses import dataclass

ISO_SCORES = (0.5, 0.7, 0.9)


@dataclass(frozen=True)
class Band:
    name: str  # a CSS class and a stable key
    label: str
    lower: float  # the band holds scores >= lower (and below the next band's lower)
    colour: str


BANDS = (
    Band("band-top", "S ≥ 0.9", 0.9, "#1a9850"),
    Band("band-high", "0.7 ≤ S < 0.9", 0.7, "#91cf60"),
    Band("band-mid", "0.5 ≤ S < 0.7", 0.5, "#fdae61"),
    Band("band-low", "S < 0.5 (slower than T_b)", 0.0, "#d73027"),
)
NO_SCORE = Band("band-none", "no score", float("nan"), "#9e9e9e")


def band_of(score: float | None) -> Band:
    """The band a score falls in; NO_SCORE for None (T_SOL or T_b unknown)."""
    if score is None:
        return NO_SCORE
    for band in BANDS:
        if score >= band.lower:
            return band
    return BANDS[-1]
