"""Type stubs of the native module `tally._tally` (see crates/tally-py)."""

import os
from typing import Any

from ._keywords import Calibration, Domain, Hierarchy, TrieShape

__version__: str

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
    calibration: Calibration,
    seed: int | None,
    sampling_key: str | None,
    rows_as_clients: bool,
    description: str | None,
) -> tuple[str, str, list[dict[str, Any]]]: ...
def items_histogram(
    items: tuple[str, Any],
    clients: tuple[str, Any] | None,
    calibration: Calibration,
    mechanism: str,
    max_items_per_client: int | None,
    seed: int | None,
    sampling_key: str | None,
    rows_as_clients: bool,
    description: str | None,
) -> tuple[str, str, list[dict[str, Any]]]: ...
def is_domain_mechanism(mechanism: str) -> bool: ...
def run_task(
    spec: str,
    data: list[str],
    holders: list[int] | None,
    seed: int | None = None,
    clients: list[str] | None = None,
    sampling_key: str | None = None,
) -> str: ...
def charge_under(
    epsilon: float, delta: float, neighbours: str, budget_neighbours: str
) -> tuple[float, float]: ...
def histogram_neighbours(mechanism: str, neighbours: str) -> str: ...
def domain_accuracy(
    calibration: Calibration,
    mechanism: str,
    options: Domain,
    clients: int,
    counts: list[int],
) -> tuple[int | None, list[tuple[int, float, float | None]]]: ...
def histogram_accuracy(
    calibration: Calibration,
    mechanism: str,
    max_items_per_client: int | None,
    keyed: bool,
    counts: list[int],
) -> tuple[int | None, list[tuple[int, float, float | None]]]: ...
def filter_spent(charges: list[tuple[float, float]]) -> tuple[float, float]: ...
def filter_admits(
    budget: tuple[float, float], charges: list[tuple[float, float]], charge: tuple[float, float]
) -> tuple[bool, tuple[float, float]]: ...
def domain_histogram(
    items: tuple[str, Any],
    clients: tuple[str, Any] | None,
    calibration: Calibration,
    mechanism: str,
    options: Domain,
    given: tuple[bool, bool],
    seed: int | None,
    rows_as_clients: bool,
    description: str | None,
) -> str: ...
def heavy_hitters(
    items: tuple[str, Any],
    clients: tuple[str, Any] | None,
    calibration: Calibration,
    shape: TrieShape,
    seed: int | None,
    rows_as_clients: bool,
    description: str | None,
) -> str: ...
def keyed_parameters(calibration: Calibration) -> tuple[float, int]: ...
def check_sampling_key(key: str) -> None: ...
def keyed_coins(key: str, rate: float, clients: tuple[str, Any]) -> Any: ...
def keyed_rows(key: str, clients: tuple[str, Any], offsets: Any, items: tuple[str, Any]) -> Any: ...
class KeyedCounter:
    """The sampled counts of one part of a keyed histogram's rows (a Spark partition)."""

    def __init__(self, key: str, rate: float, integers: bool) -> None: ...
    @staticmethod
    def items(key: str, max_items: int, rate: float | None) -> KeyedCounter: ...
    def absorb_rows(self, clients: tuple[str, Any], items: tuple[str, Any]) -> None: ...
    def absorb_clients(self, clients: tuple[str, Any], runs: Any, items: tuple[str, Any]) -> None: ...
    def finish(self) -> tuple[Any, Any, int]: ...

def keyed_counts_document(
    counts: list[tuple[str, int]], clients: int, input: str, calibration: Calibration
) -> str: ...
def keyed_items_parameters(
    calibration: Calibration, mechanism: str, max_items_per_client: int | None
) -> tuple[float, int] | None: ...
def keyed_items_document(
    counts: list[tuple[str, int]],
    clients: int,
    source: str,
    calibration: Calibration,
    mechanism: str,
    max_items_per_client: int | None,
    sampling_key: str,
    seed: int | None,
) -> str: ...
def keyed_triehh_parameters(calibration: Calibration, shape: TrieShape) -> tuple[float, int]: ...
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
    calibration: Calibration,
    shape: TrieShape,
) -> str: ...
def quantiles(
    values: tuple[str, Any],
    quantiles: list[float],
    calibration: Calibration,
    hierarchy: Hierarchy,
    min: float | None,
    max: float | None,
    quantile_method: str,
    seed: int | None,
    truth: bool,
    description: str | None,
) -> str: ...
def range_count(
    values: tuple[str, Any],
    lo: float,
    hi: float,
    calibration: Calibration,
    hierarchy: Hierarchy,
    min: float | None,
    max: float | None,
    seed: int | None,
    description: str | None,
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
def privacy_pair(epsilon: float, delta: float) -> str: ...
def plan_domain_histogram(
    mechanism: str,
    clients: int,
    calibration: Calibration,
    options: Domain,
    report: str | None,
    items: tuple[str, Any] | None,
    item_clients: tuple[str, Any] | None,
    recall_at: int,
    population_seed: int,
    description: str | None,
) -> tuple[str, os.PathLike[str] | None]: ...
def plan_quantiles(
    quantiles: list[float],
    calibration: Calibration,
    hierarchy: Hierarchy,
    quantile_method: str,
    report: str | None,
    values: tuple[str, Any] | None,
    min: float | None,
    max: float | None,
    description: str | None,
) -> tuple[str, os.PathLike[str] | None]: ...
def plan_triehh_plus(
    epsilon: float,
    delta: float,
    levels: int,
    sampling_rate: float | None = None,
    threshold: int | None = None,
    method: str = "tight",
) -> str: ...
