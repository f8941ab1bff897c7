#!/usr/bin/env python3
"""Independent reference for the shuffle guarantees against colluding devices.

Written from `docs/privacy/shuffle-pld.md` and `docs/federated/threat-model.md` ("Colluding
devices"), NOT from the Rust code in `crates/tally-accounting/src/collusion.rs`. A device that
colludes with the analyst hands over its messages, so an honest device keeps the guarantee of
the same protocol run by the honest devices alone:

    honest = n - min(ceil(f n), n - 1)

and, with every other device colluding, its own report: the local eps0 of shuffled GRR, and
no guarantee (eps = infinity) for the blanket protocols. The published value is never below
the guarantee's own (eps, delta) (the larger of two upper bounds is one).

* shuffled GRR: eps over the honest reports by `shuffle.py`'s `eps_of_delta` (the section 8.1
  pair summed over every clone count, 60 bisection steps), capped at eps0;
* Count-Min (Ghazi et al., Algorithm 2): the blanket of floor(honest/k) coins per cell,
  tau*k moves, by `blanket_pld.py`'s dp_accounting brackets at delta_L; the blanket cap's
  share delta - delta_L is paid at the larger eps: delta_L + (delta - delta_L)(1 + e^eps_c)/(1 +
  e^eps) (the cap bounds n*eta(1 + e^eps) <= delta - delta_L at the calibrated eps);
* Hadamard response (Algorithm 1): floor(rho*honest/k) uniform tuples, each in a row's
  hyperplane with probability 2^-tau (tau fixed by the calibrated n), k moves, at delta.

Usage (from anywhere):

    python3 tools/reference/collusion.py            # (re)write the JSON vectors
    python3 tools/reference/collusion.py --check    # regenerate in memory, compare, exit 1 on diff
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts
import blanket_pld  # noqa: E402  (the binomial-blanket brackets)
import shuffle  # noqa: E402  (amplification by shuffling, summed)
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

SCRIPT = vectors_io.Script(__file__)
JSON = vectors_io.JsonFormat(vectors_io.float_string)

FRACTIONS = [0.1, 0.5]


def honest_devices(n: int, f: float) -> int:
    return n - min(math.ceil(n * f), n - 1)


def grr_cases(log) -> list[dict]:
    cases = []
    for n, eps0, delta, bound in [(200, 2.0, 1e-3, "fmt23"), (150, 3.0, 1e-4, "fmt21")]:
        target = shuffle.eps_of_delta(n, eps0, delta, bound)
        for f in FRACTIONS + [1.0]:
            honest = honest_devices(n, f)
            colluded = eps0 if honest < 2 else min(shuffle.eps_of_delta(honest, eps0, delta, bound), eps0)
            cases.append({"bound": bound, "users": n, "local_epsilon": eps0, "epsilon": target,
                          "delta": delta, "colluding_fraction": f, "honest": honest,
                          "collusion_epsilon": max(colluded, target), "floor": eps0})
            log(f"grr n={n} eps0={eps0} f={f}: honest {honest}, eps {target:.6f} -> {max(colluded, target):.6f}")
    return cases


def count_min_cases(log) -> list[dict]:
    cases = []
    users, domain, k, beta, delta, gamma = 3000, 2, 1, 0.01, 1e-6, 0.05
    rows = blanket_pld.count_min_rows(domain, beta)
    delta_l = blanket_pld.lemma_delta(delta)
    # The guarantee of this blanket over all n devices (the pessimistic, upper bracket).
    target = blanket_pld.compose_epsilon(users // k, gamma, 0.0, rows * k, delta_l)[1]
    for f in FRACTIONS:
        honest = honest_devices(users, f)
        lower, upper = blanket_pld.compose_epsilon(honest // k, gamma, 0.0, rows * k, delta_l)

        def paid(eps_c: float) -> float:
            return delta_l + (delta - delta_l) * (1.0 + math.exp(eps_c)) / (1.0 + math.exp(target))

        cases.append({"users": users, "domain": domain, "set_size": k, "beta": beta, "rows": rows,
                      "gamma": gamma, "epsilon": target, "delta": delta, "lemma_delta": delta_l,
                      "colluding_fraction": f, "honest": honest,
                      "epsilon_lower": max(lower, target), "epsilon_upper": max(upper, target),
                      "delta_lower": paid(max(lower, target)), "delta_upper": paid(max(upper, target))})
        log(f"count-min n={users} gamma={gamma} f={f}: eps {target:.4f} -> [{lower:.4f}, {upper:.4f}]")
    return cases


def hadamard_cases(log) -> list[dict]:
    cases = []
    users, domain, k, delta, rho = 3000, 1024, 3, 1e-3, 400
    tau = int(math.floor(math.log2(users)))
    pi = 2.0**-tau
    target = blanket_pld.compose_epsilon(rho * users // k, pi, pi, k, delta)[1]
    for f in FRACTIONS:
        honest = honest_devices(users, f)
        lower, upper = blanket_pld.compose_epsilon(rho * honest // k, pi, pi, k, delta)
        cases.append({"users": users, "domain": domain, "set_size": k, "tau": tau, "rho": rho,
                      "epsilon": target, "delta": delta, "colluding_fraction": f, "honest": honest,
                      "epsilon_lower": max(lower, target), "epsilon_upper": max(upper, target)})
        log(f"hadamard n={users} rho={rho} f={f}: eps {target:.4f} -> [{lower:.4f}, {upper:.4f}]")
    return cases


def generate(log) -> dict:
    document = {
        "generated_by": SCRIPT.generated_by,
        "description": (
            "The guarantee an honest device keeps when a fraction f of the devices colludes: "
            "the protocol over the honest devices alone (shuffled GRR by summing the section 8.1 "
            "pair; Count-Min and Hadamard response by dp_accounting brackets of their binomial "
            "blankets, Count-Min's cap share paid at the larger eps), never below the guarantee "
            "itself; the floor with every other device colluding."
        ),
        "grr": grr_cases(log),
        "count_min": count_min_cases(log),
        "hadamard": hadamard_cases(log),
    }
    return {"collusion.json": JSON.document(document)}


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
