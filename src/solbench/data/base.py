"""The base of every file model: unknown keys are kept, and dumping gives back what was read."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict


class SpecModel(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, ser_json_inf_nan="constants")

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON object for this model: the keys that were read (or set), unknown ones included."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_json_dict(), indent=indent, ensure_ascii=False)
