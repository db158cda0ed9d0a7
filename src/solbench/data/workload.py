"""Workload: one concrete instance of a problem (axis values, how each input is made, tolerance)."""

from __future__ import annotations

import math
import warnings
from typing import Annotated, Any, Literal, Union

from pydantic import Discriminator, Field, PrivateAttr, StrictBool, StrictFloat, StrictInt, Tag, model_serializer, model_validator

from solbench.data.base import SpecModel
from solbench.data.definition import Distribution, tagged_by_type
from solbench.data.errors import SpecWarning


class RandomInput(SpecModel):
    type: Literal["random"]
    distribution: Distribution | None = None  # overrides the definition's, if any


class ScalarInput(SpecModel):
    type: Literal["scalar"]
    value: StrictBool | StrictInt | StrictFloat


class SafetensorsInput(SpecModel):
    type: Literal["safetensors"]
    path: str = Field(min_length=1)
    tensor_key: str = Field(min_length=1)


class CustomInput(SpecModel):
    type: Literal["custom"]


InputSpec = Annotated[
    Union[
        Annotated[RandomInput, Tag("type=random")],
        Annotated[ScalarInput, Tag("type=scalar")],
        Annotated[SafetensorsInput, Tag("type=safetensors")],
        Annotated[CustomInput, Tag("type=custom")],
    ],
    Discriminator(
        tagged_by_type,
        custom_error_type="input_type",
        custom_error_message="expected an input {type: random} | {type: scalar, value} | {type: safetensors, path, tensor_key} | {type: custom}",
    ),
]

RATIO_ALIAS = "required_match_ratio"


DEFAULT_ATOL = 1e-2
DEFAULT_RTOL = 1e-2
DEFAULT_MATCHED_RATIO = 0.99  # the public layout's default: non-deterministic references (atomics) pass against themselves


class Tolerance(SpecModel):
    """Element i matches when |out - ref| <= max_atol + max_rtol * |ref|; absent fields take the
    public layout's defaults (1e-2, 1e-2, a matched ratio of 0.99)."""

    max_atol: float = Field(DEFAULT_ATOL, ge=0)
    max_rtol: float = Field(DEFAULT_RTOL, ge=0)
    required_matched_ratio: float = Field(DEFAULT_MATCHED_RATIO, ge=0, le=1)
    max_error_cap: float | None = Field(None, ge=0)
    allow_negative_inf: bool = False
    _ratio_spelling: str | None = PrivateAttr(None)

    @model_validator(mode="wrap")
    @classmethod
    def _ratio_alias(cls, data: Any, handler: Any) -> Tolerance:
        spelled_alias = isinstance(data, dict) and RATIO_ALIAS in data
        if spelled_alias:
            data = dict(data)
            both = "required_matched_ratio" in data
            if both and data["required_matched_ratio"] != data[RATIO_ALIAS]:
                raise ValueError(f"both required_matched_ratio and {RATIO_ALIAS} (its alias) are given, with different values")
            data["required_matched_ratio"] = data.pop(RATIO_ALIAS)
            warnings.warn(SpecWarning(f"tolerance.{RATIO_ALIAS} read as required_matched_ratio (its alias)"), stacklevel=2)
        model = handler(data)
        model._ratio_spelling = ("both" if both else RATIO_ALIAS) if spelled_alias else None
        return model

    @model_serializer(mode="wrap")
    def _write_ratio_as_read(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if self._ratio_spelling == "both" and "required_matched_ratio" in data:
            data[RATIO_ALIAS] = data["required_matched_ratio"]
        elif self._ratio_spelling and "required_matched_ratio" in data:
            data = {(RATIO_ALIAS if k == "required_matched_ratio" else k): v for k, v in data.items()}
        return data

    def allowed_error(self, reference_magnitude: Any) -> Any:
        """The tolerance rule, stated once: an element matches when |out - ref| <= atol + rtol * |ref|.
        `reference_magnitude` is |ref|: a number, or a tensor of them (then a new tensor)."""
        return reference_magnitude * self.max_rtol + self.max_atol

    def matches(self, error: float, reference_magnitude: float) -> bool:
        return error <= self.allowed_error(reference_magnitude)

    @property
    def error_cap(self) -> float:
        return math.inf if self.max_error_cap is None else self.max_error_cap


class Workload(SpecModel):
    uuid: str = Field(min_length=1)
    axes: dict[str, StrictInt] = Field(default_factory=dict)
    inputs: dict[str, InputSpec] = Field(default_factory=dict)
    tolerance: Tolerance | None = None

    @property
    def effective_tolerance(self) -> Tolerance:
        return self.tolerance if self.tolerance is not None else Tolerance()
