"""The grader's closed word lists: the only words an answer may carry, and what each means.

The answer grammar (`tandem.grading.answer`) accounts for every token of an answer or
refuses it. Words are the risky tokens: `5 \\text{ thousand}`, `5 \\text{ squared}` and
`5 \\text{ maybe}` are all "a number and a word", and only a closed list can tell a unit
from a multiplier, an operation or a doubt. So the lists here are the whole vocabulary:

- `UNITS`: words dropped after a value (with an optional `^2` / `^3`, joined by `per` or
  `/`): units of measure, money, time, angle, and count nouns that never change a value.
- `FUNCTIONS`: names read as functions inside an expression (`\\sin`, `\\log`, `sin`).
- `COMMANDS`: the LaTeX commands an expression may contain; any other command is unparsed.
- `HEDGES`: words and commands by which an answer qualifies itself or offers several
  values; against a single gold they make the answer unequal (counted as `hedged`).

A word in none of these lists is unparsed: the answer is unequal to any gold that is not
written with the same word (`model_spec/GRADER.md`, "The grammar").
"""

from __future__ import annotations

_LENGTH = "mm cm m km meter meters metre metres centimeter centimeters millimeter millimeters kilometer kilometers"
_IMPERIAL = "in inch inches ft foot feet yd yard yards mi mile miles"
_MASS = "mg g kg gram grams kilogram kilograms lb lbs pound pounds oz ounce ounces ton tons tonne tonnes"
_VOLUME = "ml mL l L liter liters litre litres gallon gallons quart quarts pint pints cup cups"
_TIME = ("s sec secs second seconds min mins minute minutes h hr hrs hour hours day days week weeks "
         "month months year years")
_MONEY = "dollar dollars cent cents euro euros USD"
_ANGLE = "degree degrees deg rad radian radians"
_SPEED = "mph kph kmh"
# Not `K`: `5K` is also read as 5,000, so it is not dropped.
_PHYSICS = "J kJ W kW N Pa Hz eV keV MeV nm pc AU"
_SHAPE = "unit units square cubic sq cu"
# Count nouns seen after GSM8K-style answers; none of them scales, negates or doubts a value.
_COUNTS = ("people students children kids persons apples eggs cookies cakes pies books pages "
           "marbles cards stickers candies pencils pens boxes bags balls cars miles points "
           "items pieces slices bottles cans trees flowers birds dogs cats fish")
UNITS = frozenset(
    w for w in " ".join([_LENGTH, _IMPERIAL, _MASS, _VOLUME, _TIME, _MONEY, _ANGLE, _SPEED, _PHYSICS, _SHAPE,
                         _COUNTS]).split()
)
# Single letters are units only inside a text command (`5 \\text{ m}`): bare, they are variables.
UNIT_JOINERS = frozenset({"per"})  # "km per hour"

FUNCTIONS = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh ln log exp gcd lcm max min det".split()
)

# Commands an expression may contain (besides FUNCTIONS as commands). Greek letters are variables.
_GREEK = ("alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi "
          "pi rho sigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Phi Psi Omega")
_STRUCTURE = "frac dfrac tfrac sqrt binom dbinom tbinom cdot times div infty prime dot ddot hat bar vec overline"
_SETS = "cup cap in setminus emptyset varnothing mid lfloor rfloor lceil rceil hbar odot partial circ"
_RELATIONS = "le leq ge geq lt gt leqslant geqslant"
GREEK = frozenset(_GREEK.split()) - {"pi"}  # a Greek letter may name an answer (`\\theta = 65^\\circ`); `\\pi` is a value
COMMANDS = frozenset(" ".join([_GREEK, _STRUCTURE, _SETS, _RELATIONS]).split()) | FUNCTIONS

HEDGE_WORDS = frozenset(
    ("or and more less least most than about approximately approx around roughly nearly almost between "
     "either maybe possibly probably perhaps not no none unknown undefined guess likely plus minus").split()
)
HEDGE_COMMANDS = frozenset("pm mp approx sim simeq neq ne cong propto".split())
# Relations: an inequality is an interval when it bounds one variable, else a hedge.
LESS = frozenset({"<", "le", "leq", "lt", "leqslant"})
GREATER = frozenset({">", "ge", "geq", "gt", "geqslant"})

# Presentation only: dropped wherever they stand.
INVISIBLE_COMMANDS = frozenset(
    "left right big Big bigg Bigg bigl bigr Bigl Bigr displaystyle textstyle limits nolimits".split()
)
SPACING_COMMANDS = frozenset("quad qquad enspace thinspace medspace thickspace".split())
TEXT_COMMANDS = frozenset(
    "text textbf textit textrm textnormal textsf mbox mathrm mathbf mathit mathsf operatorname rm".split()
)
MATRIX_ENVIRONMENTS = frozenset({"matrix", "pmatrix", "bmatrix"})
# Commands that write another command's meaning: `\\dfrac` is `\\frac`, and `\\backslash` between
# sets (`\\mathbb{R}\\backslash\\{5\\}`) is `\\setminus`.
SAME_COMMANDS = {"dfrac": "frac", "tfrac": "frac", "backslash": "setminus"}

# How many arguments TeX reads after each command (one token or one group each; `^` and `_`
# take one too): `tandem.grading.tokens.braced_arguments` writes them all in braces.
ARGUMENT_COUNTS = {"frac": 2, "binom": 2, "dbinom": 2, "tbinom": 2, "sqrt": 1, "overline": 1, "bar": 1, "hat": 1,
                   "vec": 1, "dot": 1, "ddot": 1, "boxed": 1, "fbox": 1, "mathbb": 1}

# A unit's one name, so that a unit on both sides compares by meaning, never by spelling
# (`h` / `hr` / `hours`); no conversion: `24 km` is never `24000 m`. Each group is one unit;
# a word of UNITS in no group is its own name. `units` / `unit` (square units) name no unit.
_SAME_UNIT = (
    "mm millimeter millimeters millimetre millimetres", "cm centimeter centimeters centimetre centimetres",
    "m meter meters metre metres", "km kilometer kilometers kilometre kilometres",
    "in inch inches", "ft foot feet", "yd yard yards", "mi mile miles",
    "mg milligram milligrams", "g gram grams", "kg kilogram kilograms", "lb lbs pound pounds",
    "oz ounce ounces", "ton tons", "tonne tonnes", "ml mL milliliter milliliters", "l L liter liters litre litres",
    "gallon gallons", "quart quarts", "pint pints", "cup cups",
    "s sec secs second seconds", "min mins minute minutes", "h hr hrs hour hours", "day days", "week weeks",
    "month months", "year years", "dollar dollars USD", "cent cents", "euro euros",
    "degree degrees deg", "rad radian radians", "kph kmh",
)
UNIT_NAMES = {word: group.split()[0] for group in _SAME_UNIT for word in group.split()}
UNIT_ABBREVIATIONS = {"mi / h": "mph", "km / h": "kph"}  # `miles per hour` is `mph`: one unit, two spellings
GENERIC_UNITS = frozenset({"unit", "units"})  # `12 square units`: no unit to compare
UNIT_POWERS = {"square": 2, "sq": 2, "cubic": 3, "cu": 3}  # `square cm` is `cm^2`
PERCENT_WORDS = frozenset({"percent"})  # `125 \text{ percent}` is `125\%`, against a gold that writes a percent
UNITS = UNITS | frozenset(UNIT_NAMES)  # every spelling a group names is a unit
