"""Numbers for people: a guarantee's ε and δ rounded up to four significant digits, as the
command line prints them (rounded up, so the shown guarantee is never better than the true
one)."""

from __future__ import annotations

import math

SHOWN_DIGITS = 4


def _up_to_shown_digits(x: float) -> float:
    """`x` rounded up to four significant digits (itself if zero, negative or not finite)."""
    if not math.isfinite(x) or x <= 0.0:
        return x
    scale = 10.0 ** (SHOWN_DIGITS - 1 - math.floor(math.log10(x)))
    nearest = round(x * scale)
    return nearest / scale if nearest / scale >= x else (nearest + 1) / scale


def _scientific(x: float) -> str:
    """`x` as `d.ddde-N` (four digits, the exponent without padding)."""
    mantissa, exponent = f"{x:.3e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def privacy_number(x: float) -> str:
    """An ε or δ for people: rounded up to four significant digits, plain between 0.001 and
    100,000, else in scientific notation."""
    shown = _up_to_shown_digits(x)
    if shown == 0.0 or 1e-3 <= abs(shown) < 1e5:
        text = repr(shown)
        return text.removesuffix(".0")
    return _scientific(shown)


def privacy_pair(epsilon: float, delta: float) -> str:
    """`(ε = …, δ = …)` for people, both rounded up to four significant digits."""
    shown_delta = "0" if delta == 0 else _scientific(_up_to_shown_digits(delta))
    return f"(ε = {privacy_number(epsilon)}, δ = {shown_delta})"
