"""The result of a release: the document `tally ... --json` prints, with table views."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._tally import privacy_pair


def _bool_item(text: str) -> bool:
    """A released boolean item from its text: `1` (the integer it was counted as) or `true`
    (Spark's text of it)."""
    return text in ("1", "true")


# A released item's text back in the input's Python type, and the type's Polars and Arrow
# names.
_ITEM_TYPES: dict[str, tuple[Any, str, str]] = {
    "str": (str, "String", "string"),
    "int": (int, "Int64", "int64"),
    "float": (float, "Float64", "float64"),
    "bool": (_bool_item, "Boolean", "bool_"),
}


@dataclass(frozen=True, repr=False)
class Release:
    """A private release: what `tally.histogram` and its peers return.

    Items keep the type of the column they came from (`int`, `bool`, `float` or `str`);
    `to_json` holds them as text, as the command line prints them. `rows` gives any release
    as table rows (what `to_pandas`, `to_polars` and `to_arrow` hold).

    Attributes
    ----------
    document : dict
        The JSON document the command line prints with `--json` for the same input and seed.
    kind : str
        What was released: `"histogram"`, `"heavy hitters"`, `"quantiles"` or
        `"range count"`.
    guarantee : dict
        The privacy guarantee: ε, δ, the neighbour relation, the model and the analysis.
    parameters : dict
        The mechanism's parameters (sampling rate, threshold, population, ...).
    items : list of dict
        The released items of a histogram or heavy hitters (`item`, `count`, `estimate`),
        by decreasing count.
    diagnosis : dict or None
        Why a histogram or heavy-hitter release holds few items.
    release_point : int or None
        The count at which an item is released with probability ½ (histograms of held items).

    Examples
    --------
    >>> import tally
    >>> words = ["apple"] * 300 + ["pear"] * 200 + ["fig"] * 3
    >>> release = tally.histogram(words, epsilon=1.0, delta=1e-8, seed=1)
    >>> release
    <Release histogram (sample-and-threshold): 2 items, (ε = 1, δ = 1.000e-8), add-remove>
    >>> release.kind, release.guarantee["epsilon"], release.parameters["threshold"]
    ('histogram', 1.0, 19)
    >>> release.diagnosis["release_point"]
    78
    """

    document: dict[str, Any]
    _text: str
    _item_type: str = "str"
    # A histogram's accuracy: the native function of the mechanism as the release calibrated
    # it, taking the counts to evaluate at; None for other releases.
    _accuracy_of: Callable[[list[int]], tuple[int | None, list[Any]]] | None = None

    @classmethod
    def _from_json(
        cls,
        text: str,
        item_type: str = "str",
        accuracy_of: Callable[[list[int]], tuple[int | None, list[Any]]] | None = None,
    ) -> "Release":
        """A release from its document's text, its items (if any) of `item_type`."""
        document = json.loads(text)
        _typed_items(document.get("items", []), item_type)
        return cls(document, text, item_type, accuracy_of)._warned()

    @classmethod
    def _from_parts(
        cls,
        parts: tuple[str, str, list[dict[str, Any]]],
        item_type: str,
        accuracy_of: Callable[[list[int]], tuple[int | None, list[Any]]],
    ) -> "Release":
        """A histogram from its text, its document without the items, and the items (of
        `item_type`), its mechanism's accuracy given by `accuracy_of`."""
        text, head, items = parts
        document = json.loads(head)
        document["items"] = _typed_items(items, item_type)
        return cls(document, text, item_type, accuracy_of)._warned()

    @property
    def release_point(self) -> int | None:
        """The count at which an item is released with probability ½: the smallest count the
        release can be expected to show (None past the largest count searched)."""
        return self._accuracy([])[0]

    def error_at(self, count: int) -> dict[str, Any]:
        """How an item `count` clients hold fares in this histogram's mechanism.

        Computed by the library from the mechanism the release ran (not from the data):
        for sample-and-threshold, `P[Bin(count, rate) ≥ threshold]` and the error of
        `sampled count / rate`; for the partition selections, the noisy count's; over a public
        domain every element is released, with its estimate's error law for the clients that
        reported (unclamped: an upper bound for a `clamp=True` release).

        Parameters
        ----------
        count : int
            The clients holding the item (each contributing it).

        Returns
        -------
        dict
            `count`, `release_probability` (that the item is released) and
            `expected_absolute_error` (of its estimate given that it is released; None for
            the truncated-geometric selection, which shows no count, and for a domain
            mechanism whose error has no closed form).

        Raises
        ------
        ValueError
            For a release other than `tally.histogram`'s.

        Examples
        --------
        >>> import tally
        >>> words = ["apple"] * 300 + ["pear"] * 200 + ["fig"] * 3
        >>> release = tally.histogram(words, epsilon=1.0, delta=1e-8, seed=1)
        >>> release.release_point
        78
        >>> at = release.error_at(300)
        >>> round(at["release_probability"], 6), round(at["expected_absolute_error"], 1)
        (1.0, 24.6)
        >>> ratings = [1] * 300 + [2] * 500 + [3] * 200
        >>> local = tally.histogram(ratings, mechanism="grr", domain=4, epsilon=1.0, delta=1e-8,
        ...                         neighbours="replace-one", seed=1)
        >>> local.release_point, round(local.error_at(300)["expected_absolute_error"], 1)
        (0, 35.2)
        """
        from ._keywords import whole

        (_, [(shown, probability, error)]) = self._accuracy([whole("count", count)])
        return {
            "count": shown,
            "release_probability": probability,
            "expected_absolute_error": error,
        }

    def _accuracy(self, counts: list[int]) -> tuple[int | None, list[Any]]:
        if self._accuracy_of is None:
            raise ValueError(
                f"the accuracy of a release is known for tally.histogram's releases; this is a "
                f"{self.kind} release ({self.document.get('mechanism')})"
            )
        return self._accuracy_of(counts)

    def __repr__(self) -> str:
        """The kind of release, its size and its guarantee for people (ε and δ rounded up to
        four significant digits), never the document."""
        mechanism = self.document.get("mechanism")
        by = f" ({mechanism})" if mechanism else ""
        return f"<Release {self.kind}{by}: {self._size()}, {self._guarantee_shown()}>"

    @property
    def kind(self) -> str:
        """What was released: `"histogram"`, `"heavy hitters"`, `"quantiles"` or
        `"range count"`."""
        if "trie" in self.document:
            return "heavy hitters"
        if "quantiles" in self.document:
            return "quantiles"
        if "range" in self.document:
            return "range count"
        return "histogram"

    def _size(self) -> str:
        """How much was released, in words."""
        if "items" in self.document:
            count = len(self.items)
            return f"{count} item{'' if count == 1 else 's'}"
        if "quantiles" in self.document:
            count = len(self.document["quantiles"])
            return f"{count} quantile{'' if count == 1 else 's'}"
        return "1 count"

    def _guarantee_shown(self) -> str:
        """`(ε = …, δ = …), neighbours` for people."""
        guarantee = self.guarantee
        pair = privacy_pair(guarantee["epsilon"], guarantee["delta"])
        return f"{pair}, {guarantee['neighbours']}"

    def _warned(self) -> "Release":
        """This release, once its diagnosis's warnings (δ ≥ 1/n) are issued as
        `UserWarning`s, as the command line prints them on stderr."""
        warned = (self.diagnosis or {}).get("warnings", []) + self.document.get("warnings", [])
        for warning in warned:
            warnings.warn(warning, UserWarning, stacklevel=4)
        return self

    @property
    def diagnosis(self) -> dict[str, Any] | None:
        """Why a histogram or heavy-hitter release holds few items, as the command line says
        it: `explanation` (sentences, empty unless the release is `thin`), `release_point`
        (the clients an item needs to be released with probability ½), `clients`,
        `largest_released_count` and `warnings`; `None` for other releases."""
        return self.document.get("diagnosis")

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
        """The document exactly as `tally ... --json` prints it (without the final newline).

        Returns
        -------
        str
            The JSON document; items are held as text, as the command line prints them.

        Examples
        --------
        >>> import tally
        >>> words = ["apple"] * 300 + ["pear"] * 200 + ["fig"] * 3
        >>> release = tally.histogram(words, epsilon=1.0, delta=1e-8, seed=1)
        >>> import json
        >>> json.loads(release.to_json())["parameters"]["threshold"]
        19
        """
        return self._text

    def rows(self) -> list[dict[str, Any]]:
        """The release as table rows.

        Returns
        -------
        list of dict
            The released items (`item`, `count`, `estimate`), the estimated quantiles
            (`quantile`, `value`, and `interval_lo`/`interval_hi` of a binary search,
            `true_value`/`rank_error` with `truth`), or the one range count (`lo`, `hi`,
            `grid_lo`, `grid_hi`, `estimate`, `fraction`).

        Examples
        --------
        >>> import tally
        >>> words = ["apple"] * 300 + ["pear"] * 200 + ["fig"] * 3
        >>> release = tally.histogram(words, epsilon=1.0, delta=1e-8, seed=1)
        >>> [(row["item"], row["count"]) for row in release.rows()]
        [('apple', 81), ('pear', 40)]
        """
        if "items" in self.document:
            return self.items
        if "quantiles" in self.document:
            rows = []
            for row in self.document["quantiles"]:
                row = dict(row)
                interval = row.pop("interval", None)
                if interval is not None:
                    row["interval_lo"], row["interval_hi"] = interval
                rows.append(row)
            return rows
        ranged = self.document["range"]
        return [dict(ranged, estimate=self.document["estimate"], fraction=self.document["fraction"])]

    def to_pandas(self) -> Any:
        """The rows (see `rows`) as a pandas DataFrame.

        Returns
        -------
        pandas.DataFrame
            One row per released item (items keep their input's type), quantile or range.

        Examples
        --------
        >>> import tally
        >>> words = ["apple"] * 300 + ["pear"] * 200 + ["fig"] * 3
        >>> release = tally.histogram(words, epsilon=1.0, delta=1e-8, seed=1)
        >>> release.to_pandas()["item"].tolist()
        ['apple', 'pear']
        """
        import pandas as pd

        if "items" in self.document:
            return pd.DataFrame(self._item_columns())
        return pd.DataFrame(self.rows())

    def to_polars(self) -> Any:
        """The rows (see `rows`) as a Polars DataFrame.

        Returns
        -------
        polars.DataFrame
            One row per released item (`count` as `UInt64`), quantile or range.

        Examples
        --------
        >>> import tally
        >>> words = ["apple"] * 300 + ["pear"] * 200 + ["fig"] * 3
        >>> release = tally.histogram(words, epsilon=1.0, delta=1e-8, seed=1)
        >>> release.to_polars()["count"].to_list()
        [81, 40]
        """
        import polars as pl

        if "items" in self.document:
            item = getattr(pl, _ITEM_TYPES[self._item_type][1])
            schema = {"item": item, "count": pl.UInt64, "estimate": pl.Float64}
            return pl.DataFrame(self._item_columns(), schema=schema)
        return pl.DataFrame(self.rows())

    def to_arrow(self) -> Any:
        """The rows (see `rows`) as a pyarrow Table.

        Returns
        -------
        pyarrow.Table
            One row per released item (`count` as `uint64`), quantile or range.

        Examples
        --------
        >>> import tally
        >>> words = ["apple"] * 300 + ["pear"] * 200 + ["fig"] * 3
        >>> release = tally.histogram(words, epsilon=1.0, delta=1e-8, seed=1)
        >>> release.to_arrow().column_names
        ['item', 'count', 'estimate']
        """
        import pyarrow as pa

        if "items" not in self.document:
            return pa.Table.from_pylist(self.rows())
        columns = self._item_columns()
        return pa.table(
            {
                "item": pa.array(columns["item"], getattr(pa, _ITEM_TYPES[self._item_type][2])()),
                "count": pa.array(columns["count"], pa.uint64()),
                "estimate": pa.array(columns["estimate"], pa.float64()),
            }
        )

    def _item_columns(self) -> dict[str, list[Any]]:
        return {
            "item": [row["item"] for row in self.items],
            "count": [row.get("count") for row in self.items],
            "estimate": [row["estimate"] for row in self.items],
        }


def _typed_items(items: list[dict[str, Any]], item_type: str) -> list[dict[str, Any]]:
    """`items` with each `item` turned from its text into `item_type`, in place."""
    if item_type != "str":
        parse = _ITEM_TYPES[item_type][0]
        for row in items:
            row["item"] = parse(row["item"])
    return items
