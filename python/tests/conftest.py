"""Shared fixtures: the `tally` binary and files of rows."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def tally_binary() -> Path:
    """The `tally` command: $TALLY_BIN, or the workspace's debug build."""
    path = Path(os.environ.get("TALLY_BIN", ROOT / "target" / "debug" / "tally"))
    if not path.exists():
        raise RuntimeError(f"{path} not found: build it with `cargo build -p tally-cli`")
    return path


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tally_binary()), *args], capture_output=True, text=True)


def cli_json(*args: str) -> dict:
    done = run_cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="session")
def rows_tsv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3000 clients with two or three rows each: client `u{c}` holds `w{c % 6}` and
    `x{c % 4}`, and every fifth client `w{c % 6}` again."""
    path = tmp_path_factory.mktemp("rows") / "rows.tsv"
    lines = ["client_id\titem"]
    for c in range(3000):
        lines.append(f"u{c}\tw{c % 6}")
        lines.append(f"u{c}\tx{c % 4}")
        if c % 5 == 0:
            lines.append(f"u{c}\tw{c % 6}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="session")
def words_txt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("words") / "words.txt"
    words = ["apple"] * 700 + ["pear"] * 400 + ["fig"] * 150 + ["kiwi"] * 3
    path.write_text("\n".join(words) + "\n")
    return path


@pytest.fixture(scope="session")
def values_txt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20000 numbers in [0, 100], spread evenly, one per line."""
    path = tmp_path_factory.mktemp("values") / "values.txt"
    path.write_text("".join(f"{(i * 7919) % 10007 / 100.07!r}\n" for i in range(20000)))
    return path


def check_large_arrow_batches(session, tmp_path: Path) -> None:
    """`tally.spark.histogram` runs its jobs on `session` with Arrow batches of at least
    `BATCH_ROWS` rows (seen by a Python worker upstream in the same job), and puts the
    session's setting back afterwards: unset, smaller, or larger (left alone)."""
    import tally.spark
    from tally.spark import ARROW_BATCH, BATCH_ROWS

    sizes = tmp_path / "batch-sizes"

    def record(batches):
        for batch in batches:
            with open(sizes, "a") as out:
                out.write(f"{batch.num_rows}\n")
            yield batch

    rows = [(c, f"w{c % 7}") for c in range(50_000)]
    df = session.createDataFrame(rows, "client long, item string").coalesce(1)
    observed = df.mapInArrow(record, df.schema)
    for previous in (None, "5000", str(10 * BATCH_ROWS)):
        if previous is None:
            session.conf.unset(ARROW_BATCH)
        else:
            session.conf.set(ARROW_BATCH, previous)
        sizes.write_text("")
        release = tally.spark.histogram(
            observed,
            item="item",
            client="client",
            epsilon=1.0,
            delta=1e-6,
            threshold=10,
            sampling_key="00000000000000000000000000004231",
            rows_as_clients=True,
        )
        assert len(release.items) == 7
        assert max(int(n) for n in sizes.read_text().split()) == len(rows), previous
        assert session.conf.get(ARROW_BATCH, None) == previous
    session.conf.unset(ARROW_BATCH)
    # Outside tally.spark, the session's own setting applies again.
    sizes.write_text("")
    observed.count()
    assert max(int(n) for n in sizes.read_text().split()) == 10_000
