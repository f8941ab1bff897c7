#!/usr/bin/env python3
"""Independent reference for the TrieHH++ planner's prediction: the probability that each word is found.

Written from docs/privacy/planner.md ("TrieHH++"), NOT from the Rust code in
`crates/tally-cli/src/triehh_plus_report.rs`. With segment g and L levels, level l asks a device
for the first l*g characters of its word, followed by the terminator '$' when the word ends within
them; a device whose word ended at an earlier level does not report. With restricted reporting and
fresh coins per level, a word is found with probability

    P[found] = prod_l P[Bin(c_l, p) >= tau]     (scipy.stats.binom.sf(tau - 1, c_l, p))

over its level prefixes, c_l the number of devices whose word has the same level-l prefix; a word
of L*g characters or more is never found. The vectors also carry recall@k over the k most common
words (ties by the word), the expected number of words found, and the mean absolute error of the
found words' estimates X/p, E[|X/p - c| 1{X >= tau}] (a direct sum of binom.pmf) times the
probability of the levels above the terminal one, summed and divided by the expected number found.

Usage (from anywhere):

    python3 tools/reference/triehh_found.py            # (re)write the JSON vectors
    python3 tools/reference/triehh_found.py --check    # regenerate in memory, compare, exit 1 on diff
"""

from __future__ import annotations

import sys
from pathlib import Path

from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))  # vectors_io.py sits next to this script
import vectors_io  # noqa: E402  (JSON formatting and command line shared by the scripts)

SCRIPT = vectors_io.Script(__file__, out_dir="crates/tally-cli/tests/test_vectors/triehh_found")
JSON = vectors_io.JsonFormat(vectors_io.float_string)
TERMINATOR = "$"

# Words sharing prefixes ("ab", "abc", "abd" below "a"), words alone below their first letter,
# a word as long as the levels allow and one too long for them, an empty word.
WORDS = [
    ("a", 60), ("ab", 45), ("abc", 30), ("abd", 52), ("b", 38), ("bcd", 70), ("bce", 25),
    ("c", 90), ("dddd", 44), ("eeeee", 200), ("", 33), ("fg", 41),
]
# (segment, levels, sampling rate, threshold, k)
SETTINGS = [(1, 4, 0.3, 12, 5), (2, 3, 0.25, 8, 4), (1, 6, 0.5, 20, 12)]


def level_prefix(word: str, level: int, segment: int) -> str | None:
    """The prefix a device holding `word` reports at `level` (from 1), or None."""
    chars = len(word) + 1
    if chars <= (level - 1) * segment:
        return None
    length = level * segment
    prefix = word[:length]
    if chars <= length:
        prefix += TERMINATOR
    return prefix


def case(segment: int, levels: int, p: float, tau: int, top: int) -> dict:
    counts = [{} for _ in range(levels)]
    for word, count in WORDS:
        for level in range(1, levels + 1):
            prefix = level_prefix(word, level, segment)
            if prefix is None:
                break
            counts[level - 1][prefix] = counts[level - 1].get(prefix, 0) + count
    words = sorted(WORDS, key=lambda wc: (-wc[1], wc[0].encode()))
    found, errors = [], []
    for word, count in words:
        path = []
        for level in range(1, levels + 1):
            prefix = level_prefix(word, level, segment)
            if prefix is None:
                break
            path.append(counts[level - 1][prefix])
            last = prefix
        if not last.endswith(TERMINATOR):
            found.append(0.0)
            errors.append(0.0)
            continue
        above = 1.0
        for c in path[:-1]:
            above *= float(stats.binom.sf(tau - 1, c, p))
        found.append(above * float(stats.binom.sf(tau - 1, count, p)))
        error = sum(float(stats.binom.pmf(v, count, p)) * abs(v / p - count) for v in range(tau, count + 1))
        errors.append(above * error)
    expected = sum(found)
    return {
        "segment": segment,
        "levels": levels,
        "sampling_rate": p,
        "threshold": tau,
        "top": top,
        "words": [{"word": w, "count": c, "found": f} for (w, c), f in zip(words, found)],
        "recall": sum(found[:top]) / top,
        "expected_found": expected,
        "mean_absolute_error": sum(errors) / expected,
    }


def build() -> dict:
    return {
        "generated_by": SCRIPT.generated_by,
        "description": "P[found] of each word by TrieHH++ with restricted reporting, recall@k, "
        "the expected number found and their mean absolute error, from scipy's binomial law.",
        "words": [{"word": w, "count": c} for w, c in WORDS],
        "cases": [case(*s) for s in SETTINGS],
    }


def generate(log) -> dict[str, str]:
    files = {"found.json": JSON.document(build())}
    log("built the found probabilities")
    return files


if __name__ == "__main__":
    SCRIPT.main(__doc__, generate)
