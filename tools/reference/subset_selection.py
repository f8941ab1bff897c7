#!/usr/bin/env python3
"""Independent reference for subset selection (the local `subset-selection` mechanism).

Written from Ye and Barg, "Optimal schemes for discrete distribution estimation under locally
differential privacy" (IEEE Trans. Inf. Theory 64(8), 2018), Section IV, and
docs/privacy/local-dp.md, NOT from the Rust code in `crates/tally-core/src/ldp/subset_selection.rs`.
mpmath at 40 digits.

For a domain of d items at local epsilon, a report is a k-subset: with probability
p = k e^eps / (k e^eps + d - k) a uniform k-subset holding the client's item, else a uniform
k-subset of the other d - 1 items. A report supports a given other item with probability
q = (p (k - 1) + (1 - p) k) / (d - 1); the null variance of a count estimate per client is
q (1 - q) / (p - q)^2. k is whichever of floor and ceil of d / (e^eps + 1) (at least 1, below d)
gives the smaller null variance (the smaller k on a tie).

Usage (from anywhere):

    python3 tools/reference/subset_selection.py            # (re)write the JSON vectors
    python3 tools/reference/subset_selection.py --check    # regenerate in memory, compare, exit 1 on diff
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mpmath import mp, mpf

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (the command line shared by the scripts)

mp.dps = 40

SCRIPT = vectors_io.Script(__file__, "crates/tally-core/tests/test_vectors/subset_selection")

DOMAINS = [2, 5, 8, 16, 100, 1024, 65536]
EPSILONS = ["0.1", "0.5", "1", "2", "4", "8"]


def law(d: int, eps, k: int):
    """(p, q, null variance per client) of the k-subset randomizer."""
    e = mp.exp(eps)
    p = k * e / (k * e + d - k)
    q = (p * (k - 1) + (1 - p) * k) / (d - 1)
    return p, q, q * (1 - q) / (p - q) ** 2


def case(d: int, eps_text: str) -> dict:
    eps = mpf(eps_text)
    ideal = d / (mp.exp(eps) + 1)
    candidates = []
    for k in [int(mp.floor(ideal)), int(mp.ceil(ideal))]:
        k = min(max(k, 1), d - 1)
        candidates.append((law(d, eps, k)[2], k))
    # The smaller variance; on a tie (the same k twice, or equal variances) the first.
    variance, k = min(candidates, key=lambda c: c[0])
    others = [v for v, kk in candidates if kk != k]
    # A near-tie would make the choice depend on rounding in f64: keep cases clear of it.
    assert all(abs(v / variance - 1) > mpf("1e-12") for v in others), (d, eps_text)
    p, q, variance = law(d, eps, k)
    return {
        "domain": d,
        "epsilon": eps_text,
        "size": k,
        "p": repr(float(p)),
        "q": repr(float(q)),
        "variance_per_client": repr(float(variance)),
    }


def generate(log: vectors_io.Log) -> dict[str, str]:
    cases = [case(d, eps) for d in DOMAINS for eps in EPSILONS]
    log(f"{len(cases)} cases")
    document = {"generated_by": SCRIPT.generated_by, "cases": cases}
    return {"law.json": json.dumps(document, indent=1) + "\n"}


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
