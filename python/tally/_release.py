"""The result of a release: the document `tally ... --json` prints, with table views."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Release:
    """A private release.

    `document` is the JSON document the command line prints with `--json` for the same input
    and seed; `guarantee` and `parameters` are its fields of those names, and `items` its
    released items (`item`, `count`, `estimate`).
    """

    document: dict[str, Any]
    _text: str

    @classmethod
    def _from_json(cls, text: str) -> "Release":
        return cls(json.loads(text), text)

    @property
    def guarantee(self) -> dict[str, Any]:
        """The privacy guarantee: ε, δ, the neighbour relation, the model and the analysis."""
        return self.document["guarantee"]

    @property
    def parameters(self) -> dict[str, Any]:
        """The mechanism's parameters (sampling rate, threshold, population, ...)."""
        return self.document["parameters"]

    @property
    def items(self) -> list[dict[str, Any]]:
        """The released items by decreasing count."""
        return self.document["items"]

    def to_json(self) -> str:
        """The document exactly as `tally ... --json` prints it (without the final newline)."""
        return self._text

    def _columns(self) -> dict[str, list[Any]]:
        return {
            "item": [row["item"] for row in self.items],
            "count": [row["count"] for row in self.items],
            "estimate": [row["estimate"] for row in self.items],
        }

    def to_pandas(self) -> Any:
        """The released items as a pandas DataFrame (`item`, `count`, `estimate`)."""
        import pandas as pd

        return pd.DataFrame(self._columns())

    def to_polars(self) -> Any:
        """The released items as a Polars DataFrame (`item`, `count`, `estimate`)."""
        import polars as pl

        return pl.DataFrame(self._columns(), schema={"item": pl.String, "count": pl.UInt64, "estimate": pl.Float64})

    def to_arrow(self) -> Any:
        """The released items as a pyarrow Table (`item`, `count`, `estimate`)."""
        import pyarrow as pa

        columns = self._columns()
        return pa.table(
            {
                "item": pa.array(columns["item"], pa.string()),
                "count": pa.array(columns["count"], pa.uint64()),
                "estimate": pa.array(columns["estimate"], pa.float64()),
            }
        )
