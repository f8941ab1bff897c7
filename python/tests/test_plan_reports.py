"""tally.plan.histogram and tally.plan.quantiles: the plan `tally plan histogram --mechanism`
and `tally plan quantiles` print, the parameters the runs use, and the same reports."""

from __future__ import annotations

import dataclasses
import json

import pytest

import tally

from conftest import cli_json, run_cli
from test_domain_histogram import MECHANISMS


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_a_histogram_plan_equals_the_cli_and_the_run(mechanism: str) -> None:
    neighbours = MECHANISMS[mechanism]
    planned = tally.plan.histogram(
        mechanism, 3000, epsilon=1.0, delta=1e-6, domain=16, neighbours=neighbours
    )
    expected = cli_json(
        "plan", "histogram", "--mechanism", mechanism, "--domain", "16", "--clients", "3000",
        "--epsilon", "1", "--delta", "1e-6", "--neighbours", neighbours,
    )
    document = dataclasses.asdict(planned)
    assert document.pop("report") is None
    assert document == expected
    # Plan = run: a release of 3000 clients with the same keywords has the planned guarantee.
    items = [(c * c) % 17 % 16 for c in range(3000)]
    release = tally.histogram(
        items, mechanism=mechanism, domain=16, epsilon=1.0, delta=1e-6, neighbours=neighbours,
        seed=1,
    )
    run = {key: release.guarantee[key] for key in planned.guarantee}
    assert run == planned.guarantee


def test_the_histogram_report_equals_the_cli_s(tmp_path) -> None:
    items = tmp_path / "items.txt"
    items.write_text("".join(f"{(c * c) % 17 % 16}\n" for c in range(1000)))
    common = ["--domain", "16", "--clients", "1000", "--epsilon", "1", "--delta", "1e-8"]
    cli = run_cli(
        "plan", "histogram", "--mechanism", "olh", "--neighbours", "replace-one", *common,
        "--report", str(tmp_path / "cli"), "--input", str(items), "--json",
    )
    assert cli.returncode == 0, cli.stderr
    planned = tally.plan.histogram(
        "olh", 1000, epsilon=1.0, delta=1e-8, domain=16, neighbours="replace-one",
        report=tmp_path / "python", items=str(items),
    )
    assert planned.report == str(tmp_path / "python" / "index.html")
    cli_report = json.loads((tmp_path / "cli" / "plan.json").read_text())
    python_report = json.loads((tmp_path / "python" / "plan.json").read_text())
    assert python_report == cli_report
    assert python_report["population"] is not None
    page = (tmp_path / "python" / "index.html").read_text()
    assert page.count("<svg") >= 3 and "Which to choose" in page
    # A column of the same items predicts the same.
    column = tally.plan.histogram(
        "olh", 1000, epsilon=1.0, delta=1e-8, domain=16, neighbours="replace-one",
        report=tmp_path / "column", items=[(c * c) % 17 % 16 for c in range(1000)],
        description=python_report["population"]["description"],
    )
    column_report = json.loads((tmp_path / "column" / "plan.json").read_text())
    assert column_report == python_report
    assert column.report.endswith("index.html")


@pytest.mark.parametrize(
    ("keywords", "flags"),
    [
        ({}, []),
        ({"method": "binary-search", "levels": 8}, ["--algorithm", "binary-search", "--levels", "8"]),
        ({"threshold": 20, "branching": 8, "levels": 5},
         ["--threshold", "20", "--branching", "8", "--levels", "5"]),
        ({"neighbours": "replace-one"}, ["--neighbours", "replace-one"]),
    ],
)
def test_a_quantiles_plan_equals_the_cli_and_the_run(keywords, flags) -> None:
    planned = tally.plan.quantiles([0.25, 0.5], epsilon=1.0, delta=1e-8, **keywords)
    expected = cli_json(
        "plan", "quantiles", "--quantiles", "0.25,0.5", "--epsilon", "1", "--delta", "1e-8",
        *flags,
    )
    document = dataclasses.asdict(planned)
    assert document.pop("report") is None
    if document["rounds_per_quantile"] is None:
        del document["rounds_per_quantile"]
    assert document == expected
    values = [((i * 7919) % 10_000) / 10_000 for i in range(20_000)]
    release = tally.quantiles(values, [0.25, 0.5], epsilon=1.0, delta=1e-8, seed=1, **keywords)
    assert release.guarantee["epsilon"] == planned.guarantee["epsilon"]
    assert release.guarantee["delta"] == planned.guarantee["delta"]
    assert release.document["parameters"]["threshold"] == planned.threshold


def test_the_quantiles_report_equals_the_cli_s(tmp_path) -> None:
    values = tmp_path / "values.txt"
    values.write_text("".join(f"{((i * 7919) % 1000) / 1000}\n" for i in range(30_000)))
    cli = run_cli(
        "plan", "quantiles", "--epsilon", "1", "--delta", "1e-8", "--levels", "6",
        "--report", str(tmp_path / "cli"), "--input", str(values), "--json",
    )
    assert cli.returncode == 0, cli.stderr
    planned = tally.plan.quantiles(
        epsilon=1.0, delta=1e-8, levels=6, report=tmp_path / "python", values=str(values)
    )
    cli_report = json.loads((tmp_path / "cli" / "plan.json").read_text())
    python_report = json.loads((tmp_path / "python" / "plan.json").read_text())
    assert python_report == cli_report
    assert python_report["population"]["levels"]
    assert planned.report == str(tmp_path / "python" / "index.html")
    assert "<svg" in (tmp_path / "python" / "index.html").read_text()


def test_planner_refusals_name_the_keyword(tmp_path) -> None:
    with pytest.raises(ValueError, match="invalid clients=0"):
        tally.plan.histogram("laplace", 0, epsilon=1.0, delta=1e-8, domain=16)
    with pytest.raises(ValueError, match="give domain=B"):
        tally.plan.histogram("laplace", 10, epsilon=1.0, delta=1e-8)
    with pytest.raises(ValueError, match="invalid domain=10"):
        tally.plan.histogram("ghazi-hadamard", 10, epsilon=1.0, delta=1e-8, domain=10)
    with pytest.raises(ValueError, match="give report= a directory, or drop items="):
        tally.plan.histogram("laplace", 10, epsilon=1.0, delta=1e-8, domain=16, items=[1])
    with pytest.raises(ValueError, match="give report= a directory, or drop values="):
        tally.plan.quantiles(epsilon=1.0, delta=1e-8, values=[0.5])
    with pytest.raises(ValueError, match='use method="hierarchical"'):
        tally.plan.quantiles(
            epsilon=1.0, delta=1e-8, method="binary-search", report=tmp_path, values=[0.5]
        )
    with pytest.raises(ValueError, match="give min= and max="):
        tally.plan.quantiles(epsilon=1.0, delta=1e-8, report=tmp_path / "q", values=[5.0])
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("")
    with pytest.raises(OSError, match="a file is in the way"):
        tally.plan.quantiles(epsilon=1.0, delta=1e-8, report=in_the_way)
    with pytest.raises(TypeError, match="clients"):
        tally.plan.histogram("laplace", "10", epsilon=1.0, delta=1e-8, domain=16)
