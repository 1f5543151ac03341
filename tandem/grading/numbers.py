"""Plain-number answers: their exact value, and the one rule that says when two are equal.

The rule, in one paragraph. Integers, fractions (`a/b`, `\\frac{a}{b}`, `1\\frac{4}{5}`),
decimals and scientific forms (`4.5e33`, `4.5 \\times 10^{33}`) are read as exact
rationals: a decimal is the value of the digits written (`2.50` is 5/2, `0.333` is
333/1000). Two such answers are equal when their exact values are equal; there is no
relative tolerance, so `123456.7` is not `123456.8` and `2.0000001` is not `2`. The one
exception is a decimal against a fraction whose decimal expansion never ends (`1/3`, `2/7`):
no decimal can write it exactly, so a decimal with d >= `DECIMALS_FOR_REPEATING` digits
after the point is equal to it when it *is* the fraction's expansion correctly rounded to
d places (`0.3333333` is 1/3 and `0.666667` is 2/3; `0.666666`, cut rather than rounded,
is not; `0.33333` is too short; `5.57142867` is not 39/7 = 5.5714285714..., although it
rounds to the same 6 places: it differs in its 7th; and `0.000000` is no fraction's
expansion, however small the fraction).
Irrational golds (`\\pi`, `\\sqrt{2}`) are not plain numbers: math-verify decides those.

Parsing is a hand-written scan, never a regex that can backtrack, and the callers cap the
length (`tandem.grading.grader.MAX_ANSWER_CHARS`), so any input is read in linear time.
"""

from __future__ import annotations

from fractions import Fraction

# Exponents beyond this make exact arithmetic explode (`1e999999999`); such numbers go to math-verify.
MAX_EXPONENT = 400
# The fewest decimals that can name a fraction whose expansion never ends (math-verify's
# `float_rounding` is also 6).
DECIMALS_FOR_REPEATING = 6
SIGNS = ("+", "-")  # a tuple, so that the empty string is not "in" it


def _digits(s: str, i: int) -> int:
    """Index just past the run of ASCII digits starting at `i`."""
    while i < len(s) and "0" <= s[i] <= "9":
        i += 1
    return i


def parse_decimal(s: str) -> tuple[Fraction, int] | None:
    """`[-+]?(digits[.digits] | .digits)([eE][-+]?digits)?` as (exact value, digits after the point)."""
    i = 1 if s[:1] in SIGNS else 0
    whole_end = _digits(s, i)
    frac_end = point = whole_end
    if s[point : point + 1] == ".":
        frac_end = _digits(s, point + 1)
    if whole_end == i and frac_end <= point + 1:
        return None  # no digit at all
    end, exponent = frac_end, 0
    if s[end : end + 1] in ("e", "E"):
        j = end + 1 + (1 if s[end + 1 : end + 2] in SIGNS else 0)
        exp_end = _digits(s, j)
        if exp_end == j:
            return None
        exponent, end = int(s[end + 1 : exp_end]), exp_end
    if end != len(s) or abs(exponent) > MAX_EXPONENT:
        return None
    decimals = max(frac_end - point - 1, 0)
    mantissa = Fraction(s[:frac_end].rstrip(".") or "0") if frac_end > i else Fraction(0)
    return mantissa * Fraction(10) ** exponent, max(decimals - exponent, 0)


def _power_of_ten(s: str) -> Fraction | None:
    """`10^{k}` or `10^k` with an integer k."""
    if not s.startswith("10^"):
        return None
    k = s[3:]
    if k.startswith("{") and k.endswith("}"):
        k = k[1:-1]
    body = k[1:] if k[:1] in SIGNS else k
    if not body.isdigit() or not body.isascii() or abs(int(k)) > MAX_EXPONENT:
        return None
    return Fraction(10) ** int(k)


def _latex_fraction(s: str) -> Fraction | None:
    """`\\frac{a}{b}`, `\\frac12`, and the mixed `3\\frac{1}{2}`, signed; a and b integers."""
    sign = -1 if s.startswith("-") else 1
    s = s[1:] if s[:1] in SIGNS else s
    whole, _, rest = s.partition("\\frac")
    if not _ or (whole and not (whole.isdigit() and whole.isascii())):
        return None
    if rest.startswith("{"):
        num, close, tail = rest[1:].partition("}")
        if not close or not tail.startswith("{") or not tail.endswith("}"):
            return None
        den = tail[1:-1]
    elif len(rest) == 2:
        num, den = rest[0], rest[1]  # `\frac12`
    else:
        return None
    if not (num.isdigit() and den.isdigit() and num.isascii() and den.isascii()) or int(den) == 0:
        return None
    return sign * (int(whole or 0) + Fraction(int(num), int(den)))


def parse_number(key: str) -> tuple[Fraction, int | None] | None:
    """The exact value of a plain-number answer (whitespace already removed), else None.

    Returns (value, decimals): `decimals` is the digits after the point for a decimal, None
    for an exact form (integer, fraction), so the equality rule knows what was written.
    """
    decimal = parse_decimal(key)
    if decimal is not None:
        value, decimals = decimal
        return value, (decimals if "." in key else None)
    for times in ("\\times", "\\cdot", "*"):
        mantissa, found, power = key.partition(times)
        if found:
            m, p = parse_decimal(mantissa), _power_of_ten(power)
            return (m[0] * p, None) if m and p is not None else None
    if (power := _power_of_ten(key)) is not None:
        return power, None
    if "/" in key:
        num, _, den = key.partition("/")
        a, b = parse_decimal(num), parse_decimal(den)
        if a and b and b[0] != 0 and "." not in num + den:
            return a[0] / b[0], None
        return None
    if "\\frac" in key:
        value = _latex_fraction(key)
        return (value, None) if value is not None else None
    return None


def _terminates(value: Fraction) -> bool:
    """Whether `value` has a finite decimal expansion (its denominator is 2^a 5^b)."""
    d = value.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1


def _rounded(value: Fraction, decimals: int) -> Fraction:
    """`value` correctly rounded to `decimals` places (a repeating expansion never ties)."""
    scale = 10**decimals
    return Fraction(round(value * scale), scale)


def numbers_equal(a: tuple[Fraction, int | None], b: tuple[Fraction, int | None]) -> bool:
    """The rule of the module docstring."""
    if a[0] == b[0]:
        return True
    for (decimal, decimals), (exact, _) in ((a, b), (b, a)):
        if decimals is not None and decimals >= DECIMALS_FOR_REPEATING and not _terminates(exact):
            return decimal != 0 and decimal == _rounded(exact, decimals)  # `0.000000` names no fraction
    return False
