"""Type stubs of the native module `tally._tally` (see crates/tally-py)."""

from typing import Any

def plan_sample_threshold(
    epsilon: float,
    delta: float | None = None,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    alpha: float | None = None,
    method: str = "tight",
    neighbours: str = "add-remove",
) -> str: ...
def histogram(
    items: tuple[str, Any],
    clients: tuple[str, Any] | None,
    epsilon: float,
    delta: float,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    method: str = "tight",
    neighbours: str = "add-remove",
    seed: int | None = None,
    sampling_key: str | None = None,
    rows_as_clients: bool = False,
    description: str | None = None,
) -> str: ...
def heavy_hitters(
    items: tuple[str, Any],
    clients: tuple[str, Any] | None,
    epsilon: float,
    delta: float,
    levels: int = 10,
    segment: int = 1,
    restricted: bool = True,
    composition: str | None = None,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    method: str = "tight",
    neighbours: str = "add-remove",
    seed: int | None = None,
    rows_as_clients: bool = False,
    description: str | None = None,
) -> str: ...
def keyed_parameters(
    epsilon: float,
    delta: float,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    method: str = "tight",
    neighbours: str = "add-remove",
) -> tuple[float, int]: ...
def keyed_coins(key: str, rate: float, clients: tuple[str, Any]) -> Any: ...
def keyed_rows(key: str, clients: tuple[str, Any], offsets: Any, items: tuple[str, Any]) -> Any: ...
def keyed_counts_document(
    counts: list[tuple[str, int]],
    clients: int,
    epsilon: float,
    delta: float,
    input: str,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    method: str = "tight",
    neighbours: str = "add-remove",
) -> str: ...
def keyed_triehh_parameters(
    epsilon: float,
    delta: float,
    levels: int = 10,
    segment: int = 1,
    restricted: bool = True,
    composition: str | None = None,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    method: str = "tight",
    neighbours: str = "add-remove",
) -> tuple[float, int]: ...
def keyed_prefixes(
    key: str,
    rate: float,
    level: int,
    segment: int,
    live: list[str] | None,
    clients: tuple[str, Any],
    words: tuple[str, Any],
) -> list[str | None]: ...
def keyed_triehh_document(
    levels_counts: list[list[tuple[str, int]]],
    clients: int,
    input: str,
    epsilon: float,
    delta: float,
    levels: int = 10,
    segment: int = 1,
    restricted: bool = True,
    composition: str | None = None,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    method: str = "tight",
    neighbours: str = "add-remove",
) -> str: ...
def quantiles(
    values: tuple[str, Any],
    quantiles: list[float],
    epsilon: float,
    delta: float,
    min: float | None = None,
    max: float | None = None,
    quantile_method: str = "hierarchical",
    branching: int = 4,
    levels: int = 10,
    consistent: bool = False,
    composition: str | None = None,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    method: str = "tight",
    neighbours: str = "add-remove",
    seed: int | None = None,
    truth: bool = False,
    description: str | None = None,
) -> str: ...
def range_count(
    values: tuple[str, Any],
    lo: float,
    hi: float,
    epsilon: float,
    delta: float,
    min: float | None = None,
    max: float | None = None,
    branching: int = 4,
    levels: int = 10,
    consistent: bool = False,
    composition: str | None = None,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    method: str = "tight",
    neighbours: str = "add-remove",
    seed: int | None = None,
    description: str | None = None,
) -> str: ...
def plan_shuffle(
    users: int,
    delta: float,
    local_epsilon: float | None = None,
    epsilon: float | None = None,
    bound: str = "fmt23",
) -> str: ...
def plan_compose(
    epsilon: float,
    rounds: int,
    delta: float = 0.0,
    target_delta: float | None = None,
    method: str = "optimal",
) -> str: ...
def plan_triehh_plus(
    epsilon: float,
    delta: float,
    levels: int,
    sampling_rate: float | None = None,
    threshold: int | None = None,
) -> str: ...
