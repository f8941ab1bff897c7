#!/usr/bin/env python3
"""Times tally's central Laplace histogram against OpenDP's, on the same data in one run.

Both release the count of every one of the B categories with exact discrete Laplace noise at
(ε, 0) for add-remove neighbours: OpenDP's `make_count_by_categories` on `symmetric_distance`
(one record added or removed) has L1 sensitivity 1, so it is chained with `then_laplace(scale
= 1/ε)` and the script checks that the measurement maps d_in = 1 to ε; tally's
`LaplaceHistogram` for add-remove neighbours has Δ1 = 1 and a rational scale t ≥ 1/ε.

The script makes a throwaway virtualenv with OpenDP 0.16.0 (pinned), writes the clients' items
to a temporary file (as tools/bench/compare_ldp.py does), and times on those items:

* OpenDP in-process, `meas(data)`: counting the categories and adding the noise (the
  measurement is built once, untimed). The data is passed as a numpy int32 array, the fastest
  input OpenDP takes; the same runs on a Python list are reported too, with their ratio.
* `tally bench mechanism --mechanism laplace --items FILE --json`: counting and noise.

    python3 tools/bench/compare_laplace.py                # n = 10^6, B = 2^14, ε = 1
"""

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from compare_ldp import compare, parser, read_items, time_runs  # noqa: E402

OPENDP = ["opendp==0.16.0", "numpy==2.4.6"]


def worker(args):
    """Runs in the virtualenv: times OpenDP's count-by-categories plus Laplace, prints JSON."""
    import numpy as np
    import opendp.prelude as dp

    dp.enable_features("contrib")
    items = read_items(args.items)
    array = np.array(items, dtype=np.int32)
    count = dp.t.make_count_by_categories(
        dp.vector_domain(dp.atom_domain(T=dp.i32)),
        dp.symmetric_distance(),
        categories=list(range(args.domain)),
        null_category=False,
    )
    meas = count >> dp.m.then_laplace(scale=1.0 / args.epsilon)
    assert count.map(1) == 1, "L1 sensitivity of count_by_categories"
    epsilon = meas.map(1)
    assert epsilon <= args.epsilon * (1 + 1e-12), epsilon

    result = time_runs(args.peer_repeats, lambda: array, meas)
    as_list = time_runs(args.peer_repeats, lambda: items, meas)
    result["peer"] = OPENDP[0]
    result["others"] = {"on a Python list": as_list}
    result["note"] = (
        f"input as a numpy int32 array; the measurement maps d_in = 1 to ε = {epsilon}"
    )
    print(json.dumps(result))


def main():
    args = parser(__doc__.splitlines()[0], peer_repeats=5).parse_args()
    if args.worker:
        worker(args)
    else:
        compare(args, pathlib.Path(__file__).resolve(), OPENDP, "laplace", 100)


if __name__ == "__main__":
    main()
