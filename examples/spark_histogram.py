"""A keyed sample-and-threshold histogram of a TSV file on Spark.

    spark-submit examples/spark_histogram.py rows.tsv KEYFILE [EPSILON] [DELTA]

`rows.tsv` holds `client_id<TAB>item` rows (a header row `client_id<TAB>item` is allowed);
KEYFILE holds the secret sampling key, at least 32 hexadecimal digits (`tally sampling-key
--output KEYFILE` makes one). With the same rows and key, `tally histogram --input rows.tsv
--sampling-key-file KEYFILE --epsilon ... --delta ...` prints the same release. Needs the `tally-dp` package (with pyarrow) on the driver and the
executors.
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

import tally.spark


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        sys.exit(__doc__)
    path, key_file = argv[1], argv[2]
    epsilon = float(argv[3]) if len(argv) > 3 else 1.0
    delta = float(argv[4]) if len(argv) > 4 else 1e-8
    with open(key_file, encoding="utf-8") as file:
        key = file.read().strip()
    spark = SparkSession.builder.appName("tally spark histogram").getOrCreate()
    rows = spark.read.csv(path, sep="\t", schema="client_id string, item string")
    rows = rows.filter(rows.client_id != "client_id")
    release = tally.spark.histogram(
        rows, item="item", client="client_id", epsilon=epsilon, delta=delta, sampling_key=key
    )
    print(release.to_json())
    spark.stop()


if __name__ == "__main__":
    main(sys.argv)
