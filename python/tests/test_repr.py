"""The package's version and the short `repr` of releases and plans."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib

import tally
from tally import plan
from tally._tally import privacy_pair

from conftest import ROOT


def test_version_is_the_crates() -> None:
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text())
    assert tally.__version__ == workspace["workspace"]["package"]["version"]
    assert tally.__version__ == importlib.metadata.version("tally-dp")


def test_repr_of_a_thousand_item_release_is_short() -> None:
    items = [f"w{i}" for i in range(1000) for _ in range(200)]
    release = tally.histogram(items, epsilon=1, delta=1e-8, seed=7)
    assert len(release.items) == 1000
    shown = repr(release)
    assert len(shown) < 200, shown
    assert shown == (
        "<Release histogram (sample-and-threshold): 1000 items, (ε = 1, δ = 1.000e-8), "
        "add-remove>"
    )


def test_repr_of_every_kind_names_it() -> None:
    values = [i / 1000 for i in range(1000)]
    releases = {
        "quantiles": tally.quantiles(values, epsilon=1, delta=1e-8, seed=1),
        "range count": tally.range_count(values, lo=0, hi=0.5, epsilon=1, delta=1e-8, seed=1),
        "heavy hitters": tally.heavy_hitters(
            ["ab"] * 400, epsilon=1, delta=1e-8, levels=2, seed=1
        ),
        "histogram": tally.histogram(
            ["a"] * 400, mechanism="laplace-threshold", epsilon=1, delta=1e-8, seed=1
        ),
    }
    for kind, release in releases.items():
        assert release.kind == kind
        pattern = rf"<Release {kind} \([^)]+\): \d+ \w+, \(ε = .+, δ = .+\), add-remove>"
        assert re.fullmatch(pattern, repr(release)), repr(release)


def test_plan_reprs_are_one_line_with_the_guarantee() -> None:
    plans = [
        plan.sample_threshold(1, 1e-8),
        plan.shuffle(10000, 1e-8, local_epsilon=2),
        plan.compose(0.1, 10, 1e-9, target_delta=1e-6),
        plan.triehh_plus(1, 1e-8, 10),
    ]
    for planned in plans:
        shown = repr(planned)
        assert shown.startswith(f"<{type(planned).__name__}: ") and "\n" not in shown
        assert "(ε = " in shown and len(shown) < 120, shown
    assert repr(plans[0]) == (
        "<SampleThresholdPlan: sampling rate 0.2403, threshold 19, (ε = 1, δ = 1.000e-8), "
        "add-remove>"
    )


def test_privacy_numbers_round_up_as_the_command_line_does() -> None:
    # The command line's own cases (tally_protocol::shown), through the same function.
    assert privacy_pair(0.9999502514237878, 1e-8) == "(ε = 1, δ = 1.000e-8)"
    assert privacy_pair(0.5233783398103751, 1e-8) == "(ε = 0.5234, δ = 1.000e-8)"
    assert privacy_pair(21.4, 0.000_123_41) == "(ε = 21.4, δ = 1.235e-4)"
    assert privacy_pair(0.10000030517671259, 9.99999999999998e-9) == "(ε = 0.1001, δ = 1.000e-8)"
    assert privacy_pair(2.0, 4.861718314491602e-10) == "(ε = 2, δ = 4.862e-10)"
    assert privacy_pair(1.0, 0.0) == "(ε = 1, δ = 0)"
