"""An offline privacy budget that composes releases and refuses those it cannot cover."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._keywords import number, text
from ._release import Release
from ._tally import privacy_pair
from ._tally import charge_under as _charge_under
from ._tally import filter_admits as _filter_admits
from ._tally import filter_spent as _filter_spent
from ._tally import histogram_neighbours as _histogram_neighbours


class BudgetExceeded(ValueError):
    """A release a `Budget` refused: its `(ε, δ)` does not fit what the budget has left.

    Examples
    --------
    >>> import tally
    >>> budget = tally.Budget(epsilon=1.0, delta=1e-6)
    >>> try:
    ...     budget.histogram(["a"] * 500, epsilon=2.0, delta=1e-8, seed=1)
    ... except tally.BudgetExceeded as refused:
    ...     print(refused)  # doctest: +ELLIPSIS
    the release needs (ε = 2, δ = 1.000e-8) and the budget has (ε = 1, δ = 1.000e-6) left...
    """


class Budget:
    """A privacy budget `(epsilon, delta)` for releases made one after another on the same data.

    Each release is charged its guarantee under the budget's neighbour relation (an add-remove
    `(ε, δ)` costs `(2ε, (1 + e^ε)δ)` on a replace-one budget; a replace-one release is refused
    on an add-remove budget), and admitted while the rounded-up sums of the charges fit the
    budget: basic composition, a valid privacy filter against an analyst who chooses each
    release after reading the ones before it (Rogers, Roth, Ullman and Vadhan 2016). It is the
    rule the server's ledger keeps a population's budget by (`tally_accounting::filter`). A
    release that would not fit raises `BudgetExceeded` before any data is read.

    Parameters
    ----------
    epsilon : float
        The whole budget's ε, ≥ 0.
    delta : float
        The whole budget's δ, in [0, 1).
    neighbours : str, default "add-remove"
        The budget's neighbour relation: `"add-remove"` or `"replace-one"`.

    Attributes
    ----------
    epsilon : float
        The whole budget's ε.
    delta : float
        The whole budget's δ.
    neighbours : str
        The budget's neighbour relation.
    releases : list of Release
        The releases made, in order.
    charges : list of tuple of float
        What each release was charged, `(ε, δ)` under the budget's relation.
    spent : tuple of float
        The charges' `(ε, δ)` by basic composition, rounded up.
    remaining : tuple of float
        What is left, rounded down: a release of at most that is admitted.

    Examples
    --------
    >>> import tally
    >>> budget = tally.Budget(epsilon=2.0, delta=1e-6)
    >>> words = ["apple"] * 300 + ["pear"] * 200
    >>> first = budget.histogram(words, epsilon=1.0, delta=1e-8, seed=1)
    >>> budget
    <Budget (ε = 2, δ = 1.000e-6), add-remove: spent (ε = 1, δ = 1.000e-8) on 1 release>
    >>> budget.remaining[0]
    1.0
    """

    def __init__(self, epsilon: float, delta: float, neighbours: str = "add-remove") -> None:
        self.epsilon = number("epsilon", epsilon)
        self.delta = number("delta", delta)
        self.neighbours = text("neighbours", neighbours)
        # Checks the budget and the relation (naming the keyword at fault).
        _filter_admits((self.epsilon, self.delta), [], (0.0, 0.0))
        _charge_under(0.0, 0.0, self.neighbours, self.neighbours)
        self.releases: list[Release] = []
        self.charges: list[tuple[float, float]] = []

    def __repr__(self) -> str:
        count = len(self.releases)
        return (
            f"<Budget {privacy_pair(self.epsilon, self.delta)}, {self.neighbours}: spent "
            f"{privacy_pair(*self.spent)} on {count} release{'' if count == 1 else 's'}>"
        )

    @property
    def spent(self) -> tuple[float, float]:
        """The charges' `(ε, δ)` by basic composition, rounded up."""
        return _filter_spent(self.charges)

    @property
    def remaining(self) -> tuple[float, float]:
        """What is left of the budget, rounded down."""
        return self._admits((0.0, 0.0))[1]

    def _admits(self, charge: tuple[float, float]) -> tuple[bool, tuple[float, float]]:
        return _filter_admits((self.epsilon, self.delta), self.charges, charge)

    def _charge(self, epsilon: float, delta: float, neighbours: str) -> tuple[float, float]:
        """What a release of `(epsilon, delta)` under `neighbours` costs this budget."""
        try:
            return _charge_under(epsilon, delta, neighbours, self.neighbours)
        except ValueError as error:
            raise ValueError(
                f"{error}; a release under neighbours={neighbours!r} cannot be charged to a "
                f"budget kept under {self.neighbours!r}: make it under "
                f"neighbours={self.neighbours!r}, or keep it on a "
                f"tally.Budget(..., neighbours={neighbours!r})"
            ) from None

    def _refuse_unless_admitted(self, charge: tuple[float, float]) -> None:
        admitted, left = self._admits(charge)
        if not admitted:
            raise BudgetExceeded(
                f"the release needs {privacy_pair(*charge)} and the budget has "
                f"{privacy_pair(*left)} left of {privacy_pair(self.epsilon, self.delta)}: ask "
                f"for a smaller epsilon= or delta=, or start a new budget on fresh data"
            )

    def _release(
        self,
        run: Callable[..., Release],
        keywords: dict[str, Any],
        stated_under: Callable[[str], str] = lambda asked: asked,
    ) -> Release:
        """Runs `run(**keywords)` if the budget covers the `(epsilon, delta)` asked for, under
        the relation the guarantee will be stated under (`stated_under` of the one asked for),
        and charges the release's own guarantee (at most that)."""
        keywords.setdefault("neighbours", self.neighbours)
        asked = (number("epsilon", keywords["epsilon"]), number("delta", keywords["delta"]))
        self._refuse_unless_admitted(
            self._charge(*asked, stated_under(text("neighbours", keywords["neighbours"])))
        )
        release = run(**keywords)
        guarantee = release.guarantee
        charge = self._charge(guarantee["epsilon"], guarantee["delta"], guarantee["neighbours"])
        # The guarantee is at most what was asked: a release that costs more is withheld.
        self._refuse_unless_admitted(charge)
        self.releases.append(release)
        self.charges.append(charge)
        return release

    def histogram(self, items: Any, clients: Any = None, **keywords: Any) -> Release:
        """Release a histogram as `tally.histogram`, charged to this budget.

        Parameters
        ----------
        items, clients
            As for `tally.histogram`.
        **keywords
            As for `tally.histogram`; `neighbours` defaults to the budget's relation.

        Returns
        -------
        Release
            The release, whose guarantee was charged to the budget.

        Raises
        ------
        BudgetExceeded
            The budget cannot cover `(epsilon, delta)`; no data was read.
        ValueError
            A release under a relation the budget cannot convert, or as `tally.histogram`.

        Examples
        --------
        >>> import tally
        >>> budget = tally.Budget(epsilon=1.0, delta=1e-6)
        >>> budget.histogram(["a"] * 500, epsilon=0.5, delta=1e-8, seed=1).kind
        'histogram'
        """
        from . import histogram

        mechanism = text("mechanism", keywords.get("mechanism", "sample-threshold"))
        return self._release(
            histogram,
            dict(keywords, items=items, clients=clients),
            lambda asked: _histogram_neighbours(mechanism, asked),
        )

    def heavy_hitters(self, items: Any, clients: Any = None, **keywords: Any) -> Release:
        """Find heavy hitters as `tally.heavy_hitters`, charged to this budget.

        Parameters
        ----------
        items, clients
            As for `tally.heavy_hitters`.
        **keywords
            As for `tally.heavy_hitters`; `neighbours` defaults to the budget's relation.

        Returns
        -------
        Release
            The release, whose guarantee was charged to the budget.

        Raises
        ------
        BudgetExceeded
            The budget cannot cover `(epsilon, delta)`; no data was read.
        ValueError
            As for `histogram`.

        Examples
        --------
        >>> import tally
        >>> budget = tally.Budget(epsilon=1.0, delta=1e-6)
        >>> budget.heavy_hitters(["ab"] * 500, epsilon=0.5, delta=1e-8, levels=2, seed=1).kind
        'heavy hitters'
        """
        from . import heavy_hitters

        return self._release(heavy_hitters, dict(keywords, items=items, clients=clients))

    def quantiles(self, values: Any, **keywords: Any) -> Release:
        """Estimate quantiles as `tally.quantiles`, charged to this budget.

        Parameters
        ----------
        values
            As for `tally.quantiles`.
        **keywords
            As for `tally.quantiles`; `neighbours` defaults to the budget's relation.

        Returns
        -------
        Release
            The release, whose guarantee was charged to the budget.

        Raises
        ------
        BudgetExceeded
            The budget cannot cover `(epsilon, delta)`; no data was read.
        ValueError
            As for `histogram`.

        Examples
        --------
        >>> import tally
        >>> budget = tally.Budget(epsilon=1.0, delta=1e-6)
        >>> values = [i / 1000 for i in range(1000)] * 5
        >>> budget.quantiles(values, quantiles=[0.5], epsilon=0.5, delta=1e-8, seed=1).kind
        'quantiles'
        """
        from . import quantiles

        return self._release(quantiles, dict(keywords, values=values))

    def range_count(self, values: Any, **keywords: Any) -> Release:
        """Count a range as `tally.range_count`, charged to this budget.

        Parameters
        ----------
        values
            As for `tally.range_count`.
        **keywords
            As for `tally.range_count`; `neighbours` defaults to the budget's relation.

        Returns
        -------
        Release
            The release, whose guarantee was charged to the budget.

        Raises
        ------
        BudgetExceeded
            The budget cannot cover `(epsilon, delta)`; no data was read.
        ValueError
            As for `histogram`.

        Examples
        --------
        >>> import tally
        >>> budget = tally.Budget(epsilon=1.0, delta=1e-6)
        >>> values = [i / 1000 for i in range(1000)] * 5
        >>> budget.range_count(values, lo=0.0, hi=0.5, epsilon=0.5, delta=1e-8, seed=1).kind
        'range count'
        """
        from . import range_count

        return self._release(range_count, dict(keywords, values=values))
