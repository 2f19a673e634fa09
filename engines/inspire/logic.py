"""InspireScore's logical validity: derivations in a small first-order syntax, checked by z3.

A model translates an argument into derivations (`translate`): premises and a conclusion,
each a formula. `check_derivation` gives each derivation one verdict (`Status`), decided in
this order:

* ``unparsed``: a formula does not parse, or a predicate has two arities; the error names the
  formula, the line and the column.
* ``circular``: the conclusion is one of the premises (the same syntax tree): it only restates it.
* ``inconsistent``: the premises contradict each other (they are unsatisfiable), so they
  entail anything (ex falso): not a sound step, whatever the conclusion.
* ``valid``: the premises entail the conclusion (premises ∧ ¬conclusion is unsatisfiable).
* ``invalid``: they do not; the check carries a `CounterModel`, a world read from z3's model in
  which every premise holds and the conclusion fails. Its facts are counted before they are read
  (entitiesᵃʳⁱᵗʸ per predicate): over `MAX_FACTS`, or not read within the check's time limit, there
  is none and the error says ``counter-model too large to show``.
* ``timeout``: z3 could not decide in time, or at all (``unknown``).

S_LV (`logical_validity`) is the share of valid derivations among the measured ones (valid,
invalid, inconsistent, circular); it is None when none is measured: a derivation the model
could not formalise, or one the solver could not decide, says nothing about the argument.

Formula syntax
--------------

* Atoms: a predicate is a name that starts with an upper-case letter, followed by its
  arguments in parentheses: ``Mortal(socrates)``, ``Loves(anna, bob)``. A predicate may take
  no arguments, then it is a statement: ``Raining`` (or ``Raining()``). A predicate keeps one
  arity in a whole derivation (premises and conclusion); ``Man(x)`` beside ``Man(x, y)`` is an
  error that names where.
* Terms (arguments) are names: letters, digits and ``_``. A lower-case name bound by an
  enclosing quantifier is that variable; any other name is a constant (``socrates``;
  capitalised ones like ``Socrates`` are constants too, distinct from ``socrates``). There
  are no function symbols and no equality. A free variable is therefore a constant: write
  the quantifier. ``forall`` and ``exists`` are reserved: never a variable or a constant.
* Quantifiers: ``forall x. φ`` and ``exists x. φ`` (also ``∀x. φ``, ``∃x. φ``); several
  variables at once: ``forall x y. φ``; the dot is optional: ``∀x (P(x) → Q(x))``,
  ``forall x exists y Loves(x, y)``. The scope of a quantifier reaches as far right as
  possible: ``forall x. A(x) -> B(x)`` is ``forall x. (A(x) -> B(x))``.
* Connectives, from tightest to loosest binding:

  ====================  ==============  =====================
  connective            ASCII           Unicode
  ====================  ==============  =====================
  not                   ``~`` ``!``     ``¬``
  and                   ``&``           ``∧``
  or                    ``|``           ``∨``
  implies (right)       ``->`` ``=>``   ``→``
  iff (right)           ``<->`` ``<=>`` ``↔``
  ====================  ==============  =====================

  ``&`` and ``|`` group to the left; ``->`` and ``<->`` to the right (``A -> B -> C`` is
  ``A -> (B -> C)``). Parentheses group. Whitespace, line breaks included, is free.

Examples::

    forall x. Human(x) -> Mortal(x)          every human is mortal
    Human(socrates)                          Socrates is human
    ∃x (City(x) ∧ ¬BansCars(x))              some city does not ban cars
    ~Raining | Wet(street)                   not raining, or the street is wet
    forall x y. Parent(x, y) -> Older(x, y)

A formula that does not parse gives a `FormulaError` with the formula, which one (premise
N or the conclusion), the line and column, and what was expected there. `formula_text` prints
a syntax tree back in one of three styles (ASCII, Unicode, ASCII with dots); each parses back
to the same tree.

A derivation on one line of text (`argtui logic check`, a drill's answer): ``premise ; premise
|- conclusion`` (``⊢`` for ``|-``; no premise: ``|- conclusion``), parsed into a
`WrittenDerivation`: what a person writes is bounded by its own limits (`LINE_MAX_PREMISES`
premises, `LINE_FORMULA_MAX_CHARS` characters a formula), not by the model's answer schema, and
a line over them is an error at its line and column like a parse error. `check_lines` checks a
file of them one at a time as it is read, blank lines and ``#`` comments skipped, and places a
parse error at its line and column in the file.

The solver: z3 over one uninterpreted sort ``Entity`` (non-empty), each predicate a function
from ``Entity``ⁿ to Bool. Each check gets its own z3 context, so checks may run in threads at
once (`check_derivations` runs them off the event loop), and a time limit (z3's ``timeout``).
"""

from __future__ import annotations

import asyncio
import itertools
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Iterable, Iterator, Literal, Sequence

import z3
from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedToken
from pydantic import BaseModel, ConfigDict

from engines.errors import ArgtuiError
from engines.inspire.logic_prompts import EXAMPLES, LOGIC_PROMPT, logic_messages
from engines.inspire.logic_schema import (
    FORMULA_MAX_CHARS,
    MAX_DERIVATIONS,
    MAX_PREMISES,
    TEXT_MAX_CHARS,
    Derivation,
    LogicTranslation,
    translation_schema,
)
from engines.llm.budget import max_tokens_for
from engines.llm.client import LLMClient
from engines.llm.profile import Sampling
from engines.llm.types import Structured
from engines.timing import Stopwatch

__all__ = [
    "FORMULA_MAX_CHARS", "LOGIC_PROMPT", "MAX_DERIVATIONS", "MAX_PREMISES", "MEASURED", "TEXT_MAX_CHARS",
    "LINE_FORMULA_MAX_CHARS", "LINE_MAX_PREMISES", "MAX_FACTS", "TOO_LARGE",
    "CounterModel", "Derivation", "DerivationCheck", "FormulaError", "LineCheck", "LogicTranslation", "Status",
    "WrittenDerivation",
    "check_derivation", "check_derivations", "check_line", "check_lines", "derivation_words", "formula_text",
    "is_prompt_example", "logical_validity", "name_words", "parse_derivation_line", "parse_formula", "translate",
]

DEFAULT_TIMEOUT_MS = 2000
MAX_ENTITIES = 4  # a counter-model lists its facts over at most this many entities
# Facts (ground atoms) a counter-model may list: z3 evaluates each one, and a predicate of arity n
# has 4ⁿ over four entities (a 40-argument predicate would never finish, nor fit in memory).
MAX_FACTS = 256
TOO_LARGE = "counter-model too large to show"
SENTENCE_FACTS = 6  # facts a counter-model's sentence names; the rest are counted
# What a person may write on one derivation line: far above any step of an argument, and below
# what the checker's recursion over a formula's nesting (one level a character at most) can take.
LINE_MAX_PREMISES = 32
LINE_FORMULA_MAX_CHARS = 250

Status = Literal["valid", "invalid", "inconsistent", "circular", "unparsed", "timeout"]
MEASURED: tuple[Status, ...] = ("valid", "invalid", "inconsistent", "circular")  # what S_LV counts


class CounterModel(BaseModel):
    """A world in which every premise holds and the conclusion fails: its entities, what each
    constant names, and which ground atoms of the derivation's predicates are true or false."""

    model_config = ConfigDict(frozen=True)

    universe: tuple[str, ...] = ()  # the entities listed, named ones first: a constant's name, else e1, e2, …
    constants: dict[str, str] = {}  # constant → entity
    true: tuple[str, ...] = ()  # ground atoms, e.g. PricesRise, City(paris)
    false: tuple[str, ...] = ()
    unlisted: int = 0  # entities of the solver's world beyond the MAX_ENTITIES listed (their facts left out)

    def sentence(self) -> str:
        """The world in one sentence: "e.g. when PricesRise is true and TaxesRise is false"."""
        # Up to half the facts from each side (its atoms the derivation writes come first), the rest from the other.
        trues = min(len(self.true), max(SENTENCE_FACTS // 2, SENTENCE_FACTS - len(self.false)))
        falses = min(len(self.false), SENTENCE_FACTS - trues)
        facts = [f"{atom} is true" for atom in self.true[:trues]] + [f"{atom} is false" for atom in self.false[:falses]]
        more = len(self.true) + len(self.false) - len(facts)
        left_out = [f"{more} more fact{'s' if more > 1 else ''}"] if more > 0 else []
        if self.unlisted:
            left_out.append(f"the facts of {self.unlisted} more entit{'ies' if self.unlisted > 1 else 'y'}")
        unnamed = [entity for entity in self.universe if entity not in self.constants.values()]
        world = f"in a world with {_listing(list(self.universe))}, " if unnamed else ""
        note = f" ({_listing(left_out)} not shown)" if left_out else ""
        return f"e.g. {world}when {_listing(facts)}{note}"


def _listing(items: list[str]) -> str:
    return " and ".join(items) if len(items) <= 2 else ", ".join(items[:-1]) + " and " + items[-1]


class WrittenDerivation(BaseModel):
    """A derivation a person wrote on one line (`parse_derivation_line`), within the line's limits
    (LINE_MAX_PREMISES, LINE_FORMULA_MAX_CHARS); a model's answer is a `Derivation`."""

    model_config = ConfigDict(frozen=True)

    premises: tuple[str, ...] = ()
    conclusion: str


@dataclass(frozen=True)
class DerivationCheck:
    derivation: Derivation | WrittenDerivation
    status: Status
    # unparsed: the parse error with its position; timeout: z3's reason; invalid: why no counter-model
    error: str | None = None
    seconds: float = 0.0
    counter_model: CounterModel | None = None  # invalid: a world where the premises hold, the conclusion not
    formula_error: FormulaError | None = None  # unparsed: where (which formula, line, column) and why

    @property
    def valid(self) -> bool:
        return self.status == "valid"


class FormulaError(ArgtuiError):
    """A formula that does not parse, or uses a predicate with two arities."""

    def __init__(self, formula: str, where: str, line: int, column: int, problem: str,
                 expected: Sequence[str] = ()):
        self.formula, self.where, self.line, self.column = formula, where, line, column
        self.problem, self.expected = problem, tuple(expected)
        super().__init__(f"{where} {formula!r}, line {line}, column {column}: {self.reason}")

    @property
    def reason(self) -> str:
        """What is wrong, without where: the problem and what was expected there."""
        return self.problem + (f"; expected {', '.join(self.expected)}" if self.expected else "")


# ----------------------------------------------------------------------------- syntax tree


@dataclass(frozen=True)
class Atom:
    predicate: str
    arguments: tuple[str, ...]
    # Where the atom was written: not part of what it says, so two trees compare without it.
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Not:
    operand: "Node"


@dataclass(frozen=True)
class Binary:
    connective: Literal["and", "or", "implies", "iff"]
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Quantified:
    quantifier: Literal["forall", "exists"]
    variables: tuple[str, ...]
    body: "Node"


Node = Atom | Not | Binary | Quantified

# A quantified formula can only be the last operand of a connective (its scope reaches as far
# right as possible), so each level has a closed form, without an open quantifier at its end,
# that may stand left of an operator; this keeps the grammar free of LALR conflicts.
GRAMMAR = r"""
?start: formula
?formula: implication | implication_c IFF formula -> iff
?implication: disjunction | disjunction_c IMPLIES implication -> implies
?implication_c: disjunction_c | disjunction_c IMPLIES implication_c -> implies
?disjunction: conjunction | disjunction_c OR conjunction -> or_
?disjunction_c: conjunction_c | disjunction_c OR conjunction_c -> or_
?conjunction: unary | conjunction_c AND unary -> and_
?conjunction_c: unary_c | conjunction_c AND unary_c -> and_
?unary: unary_c | unary_o
?unary_o: QUANTIFIER VARIABLE+ DOT? formula -> quantified
        | NOT unary_o -> not_
?unary_c: NOT unary_c -> not_
        | atom
        | LPAR formula RPAR -> group
atom: PREDICATE (LPAR [term (COMMA term)*] RPAR)?
?term: VARIABLE | PREDICATE
QUANTIFIER: /forall\b/ | /exists\b/ | "∀" | "∃"
NOT: "~" | "!" | "¬"
AND: "&" | "∧"
OR: "|" | "∨"
IMPLIES: "->" | "=>" | "→"
IFF: "<->" | "<=>" | "↔"
LPAR: "("
RPAR: ")"
COMMA: ","
DOT: "."
PREDICATE: /[A-Z][A-Za-z0-9_]*/
VARIABLE: /(?!(?:forall|exists)\b)[a-z][A-Za-z0-9_]*/  // the quantifiers' words are never names
%ignore /\s+/
"""

# How the grammar's terminals are named in an error message, in the order they are listed.
EXPECTED_NAMES = {
    "PREDICATE": "a predicate (a capitalised name)",
    "VARIABLE": "a variable or constant (a lower-case name)",
    "QUANTIFIER": "a quantifier (forall, exists)",
    "NOT": "'~'",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "DOT": "'.'",
    "AND": "'&'",
    "OR": "'|'",
    "IMPLIES": "'->'",
    "IFF": "'<->'",
    "$END": "the end of the formula",
}


class _Builder(Transformer):
    """Lark's parse tree into `Node`s."""

    def atom(self, children):
        predicate, *rest = children
        arguments = tuple(str(t) for t in rest if isinstance(t, Token) and t.type in ("VARIABLE", "PREDICATE"))
        return Atom(str(predicate), arguments, predicate.line, predicate.column)

    def not_(self, children):
        return Not(children[1])

    def group(self, children):
        return children[1]

    def and_(self, children):
        return Binary("and", children[0], children[2])

    def or_(self, children):
        return Binary("or", children[0], children[2])

    def implies(self, children):
        return Binary("implies", children[0], children[2])

    def iff(self, children):
        return Binary("iff", children[0], children[2])

    def quantified(self, children):
        quantifier, *rest = children
        variables = tuple(str(t) for t in rest if isinstance(t, Token) and t.type == "VARIABLE")
        kind = "forall" if str(quantifier) in ("forall", "∀") else "exists"
        return Quantified(kind, variables, rest[-1])


@cache
def _parser() -> Lark:
    # Built on first use, not at import: the app's start-up does not pay for the tables.
    return Lark(GRAMMAR, parser="lalr", transformer=_Builder())


def _end_position(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1


def _describe(terminals: set[str]) -> list[str]:
    return [name for terminal, name in EXPECTED_NAMES.items() if terminal in terminals]


def parse_formula(text: str, where: str = "formula") -> Node:
    """The syntax tree of one formula; `FormulaError` (naming `where`) when it does not parse."""
    try:
        return _parser().parse(text)
    except UnexpectedToken as exc:
        if exc.token.type == "$END":
            line, column = _end_position(text)
            problem = "the formula ends too early" if text.strip() else "the formula is empty"
        else:
            line, column = exc.line, exc.column
            problem = f"unexpected {str(exc.token)!r}"
        raise FormulaError(text, where, line, column, problem, _describe(exc.accepts or exc.expected)) from None
    except UnexpectedCharacters as exc:
        raise FormulaError(
            text, where, exc.line, exc.column, f"unexpected character {exc.char!r}", _describe(exc.allowed)
        ) from None


# ----------------------------------------------------------------------------- printing

FormulaStyle = Literal["ascii", "unicode", "dotted"]
# Per style: the connectives' symbols, and how a quantifier is written before its variables and after them.
STYLES: dict[str, dict[str, str]] = {
    "ascii": {"not": "~", "and": "&", "or": "|", "implies": "->", "iff": "<->",
              "forall": "forall ", "exists": "exists ", "dot": ""},
    "unicode": {"not": "¬", "and": "∧", "or": "∨", "implies": "→", "iff": "↔",
                "forall": "∀", "exists": "∃", "dot": ""},
    "dotted": {"not": "~", "and": "&", "or": "|", "implies": "->", "iff": "<->",
               "forall": "forall ", "exists": "exists ", "dot": "."},
}
BINDING = {"iff": 0, "implies": 1, "or": 2, "and": 3}  # how tightly each connective binds
RIGHT_GROUPING = ("implies", "iff")
_TIGHTEST = 4  # a negation or an atom


def formula_text(node: Node, style: FormulaStyle = "unicode") -> str:
    """The formula of a syntax tree, written in `style`; it parses back to the same tree."""
    symbols = STYLES[style]
    if isinstance(node, Atom):
        return node.predicate + (f"({', '.join(node.arguments)})" if node.arguments else "")
    if isinstance(node, Quantified):
        return f"{symbols[node.quantifier]}{' '.join(node.variables)}{symbols['dot']} {formula_text(node.body, style)}"
    if isinstance(node, Not):
        return symbols["not"] + _operand(node.operand, style, _TIGHTEST)
    binding = BINDING[node.connective]
    right_grouping = node.connective in RIGHT_GROUPING
    left = _operand(node.left, style, binding + right_grouping)
    right = _operand(node.right, style, binding + (not right_grouping))
    return f"{left} {symbols[node.connective]} {right}"


def _operand(node: Node, style: FormulaStyle, binding: int) -> str:
    """An operand in parentheses unless it binds at least as tightly as `binding`. A quantified
    operand always gets them: its scope would otherwise take in what follows it."""
    if isinstance(node, Binary):
        tight = BINDING[node.connective] >= binding
    else:
        tight = not isinstance(node, Quantified)
    text = formula_text(node, style)
    return text if tight else f"({text})"


def _atoms(node: Node):
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, Atom):
            yield node
        elif isinstance(node, Not):
            stack.append(node.operand)
        elif isinstance(node, Binary):
            stack.extend((node.right, node.left))
        else:
            stack.append(node.body)


def _arities(formulas: Sequence[tuple[str, str, Node]]) -> dict[str, int]:
    """Each predicate's arity across (text, where, tree) formulas; a second arity is a FormulaError."""
    first_use: dict[str, tuple[int, str, int, int]] = {}
    for text, where, tree in formulas:
        for atom in _atoms(tree):
            arity = len(atom.arguments)
            seen = first_use.setdefault(atom.predicate, (arity, where, atom.line, atom.column))
            if seen[0] != arity:
                problem = (
                    f"{atom.predicate} takes {arity} argument(s) here but {seen[0]} in {seen[1]} "
                    f"(line {seen[2]}, column {seen[3]})"
                )
                raise FormulaError(text, where, atom.line, atom.column, problem)
    return {name: use[0] for name, use in first_use.items()}


class _Z3Translation:
    """Syntax trees into z3 terms of one context, over the sort Entity."""

    def __init__(self, context: z3.Context, arities: dict[str, int]):
        self.context = context
        self.entity = z3.DeclareSort("Entity", context)
        boolean = z3.BoolSort(context)
        self.predicates = {
            name: z3.Function(name, *([self.entity] * arity), boolean) for name, arity in arities.items()
        }
        self.constants: dict[str, z3.ExprRef] = {}

    def term(self, name: str, scope: dict[str, z3.ExprRef]) -> z3.ExprRef:
        if name in scope:
            return scope[name]
        if name not in self.constants:
            self.constants[name] = z3.Const(name, self.entity)
        return self.constants[name]

    def formula(self, node: Node, scope: dict[str, z3.ExprRef]) -> z3.BoolRef:
        if isinstance(node, Atom):
            return self.predicates[node.predicate](*(self.term(a, scope) for a in node.arguments))
        if isinstance(node, Not):
            return z3.Not(self.formula(node.operand, scope), self.context)
        if isinstance(node, Binary):
            left, right = self.formula(node.left, scope), self.formula(node.right, scope)
            if node.connective == "and":
                return z3.And(left, right)
            if node.connective == "or":
                return z3.Or(left, right)
            if node.connective == "implies":
                return z3.Implies(left, right)
            return left == right
        # Fresh constants: a bound variable never meets a constant or another binding of its name.
        bound = [z3.FreshConst(self.entity, prefix=name) for name in node.variables]
        body = self.formula(node.body, {**scope, **dict(zip(node.variables, bound))})
        return (z3.ForAll if node.quantifier == "forall" else z3.Exists)(bound, body)


class _TooLarge(Exception):
    """The counter-model has more facts than it may list, or took longer than the check's limit."""


def _counter_model(
    model: z3.ModelRef, translation: _Z3Translation, arities: dict[str, int], trees: Sequence[Node],
    timeout_ms: int,
) -> CounterModel:
    """The world of z3's `model`: its entities named after the constants that name them, and the
    truth of each ground atom of the derivation's predicates over at most MAX_ENTITIES entities;
    `_TooLarge` when those are more than MAX_FACTS or are not read within `timeout_ms`."""
    stopwatch = Stopwatch()
    elements = list(model.get_universe(translation.entity) or [])
    names: dict[int, str] = {}  # index in `elements` → entity name
    constants: dict[str, str] = {}
    for constant, term in translation.constants.items():  # in the order the derivation names them
        value = model.eval(term, model_completion=True)
        at = next((i for i, element in enumerate(elements) if element.eq(value)), len(elements))
        if at == len(elements):  # completed by the evaluation: the model left the constant open
            elements.append(value)
        constants[constant] = names.setdefault(at, constant)
    unnamed = (f"e{n}" for n in range(1, len(elements) + len(constants) + 1) if f"e{n}" not in constants)
    order = [*names, *(i for i in range(len(elements)) if i not in names)]
    listed = order[:MAX_ENTITIES]  # the named ones first
    facts = sum(len(listed) ** arity for arity in arities.values())
    if facts > MAX_FACTS:
        raise _TooLarge(f"{facts:,} facts over {len(listed)} entities; at most {MAX_FACTS} are listed")
    universe = [names.get(i) or next(unnamed) for i in listed]
    true, false = [], []
    for predicate, arity in arities.items():
        function = translation.predicates[predicate]
        for chosen in itertools.product(range(len(listed)), repeat=arity):
            if stopwatch.seconds * 1000 > timeout_ms:
                raise _TooLarge(f"its {facts:,} facts were not read within {timeout_ms:,} ms")
            atom = predicate + (f"({', '.join(universe[i] for i in chosen)})" if arity else "")
            value = model.eval(function(*(elements[listed[i]] for i in chosen)), model_completion=True)
            (true if z3.is_true(value) else false).append(atom)
    # The atoms the derivation writes come first: a sentence naming a few facts names those.
    written = {atom for tree in trees for atom in _ground_atoms(tree, constants)}
    true.sort(key=lambda atom: atom not in written)
    false.sort(key=lambda atom: atom not in written)
    return CounterModel(universe=tuple(universe), constants=constants, true=tuple(true), false=tuple(false),
                        unlisted=len(elements) - len(listed))


def _ground_atoms(node: Node, constants: dict[str, str], bound: frozenset[str] = frozenset()):
    """The atoms of `node` over constants only, as the counter-model writes them (each constant as its entity)."""
    if isinstance(node, Atom):
        if not bound.intersection(node.arguments):
            yield node.predicate + (f"({', '.join(constants[a] for a in node.arguments)})" if node.arguments else "")
    elif isinstance(node, Not):
        yield from _ground_atoms(node.operand, constants, bound)
    elif isinstance(node, Binary):
        yield from _ground_atoms(node.left, constants, bound)
        yield from _ground_atoms(node.right, constants, bound)
    else:
        yield from _ground_atoms(node.body, constants, bound | set(node.variables))


def _wheres(premises: int) -> list[str]:
    """How a derivation's formulas are named in its errors: premise 1, …, conclusion."""
    return [f"premise {i}" for i in range(1, premises + 1)] + ["conclusion"]


def check_derivation(d: Derivation | WrittenDerivation, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> DerivationCheck:
    """`d`'s verdict (see the module's docstring for the order), decided by z3 within `timeout_ms`
    for each of its (at most two) solver calls, and an invalid one's counter-model read within it too."""
    if timeout_ms <= 0:
        raise ValueError(f"timeout_ms must be positive, not {timeout_ms}")
    stopwatch = Stopwatch()
    sources = list(zip([*d.premises, d.conclusion], _wheres(len(d.premises))))
    try:
        trees = [(text, where, parse_formula(text, where)) for text, where in sources]
        arities = _arities(trees)
    except FormulaError as exc:
        return DerivationCheck(d, "unparsed", str(exc), stopwatch.seconds, formula_error=exc)
    *premise_trees, conclusion_tree = (tree for _, _, tree in trees)
    if conclusion_tree in premise_trees:
        return DerivationCheck(d, "circular", None, stopwatch.seconds)
    context = z3.Context()
    translation = _Z3Translation(context, arities)
    *premises, conclusion = (translation.formula(tree, {}) for _, _, tree in trees)
    solver = z3.Solver(ctx=context)
    solver.set("timeout", timeout_ms)
    solver.add(*premises)
    # Entailment first: a counter-model also shows the premises consistent, so one call usually decides.
    solver.push()
    solver.add(z3.Not(conclusion, context))
    outcome = solver.check()
    if outcome == z3.sat:
        try:
            counter_model = _counter_model(
                solver.model(), translation, arities, [*premise_trees, conclusion_tree], timeout_ms
            )
        except _TooLarge as exc:
            return DerivationCheck(d, "invalid", f"{TOO_LARGE} ({exc})", stopwatch.seconds)
        return DerivationCheck(d, "invalid", None, stopwatch.seconds, counter_model=counter_model)
    solver.pop()
    if outcome == z3.unsat:
        consistent = solver.check() if premises else z3.sat
        if consistent == z3.sat:
            return DerivationCheck(d, "valid", None, stopwatch.seconds)
        if consistent == z3.unsat:
            return DerivationCheck(d, "inconsistent", None, stopwatch.seconds)
    return DerivationCheck(d, "timeout", f"z3: {solver.reason_unknown()}", stopwatch.seconds)


async def check_derivations(
    derivations: Sequence[Derivation], timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> list[DerivationCheck]:
    """`check_derivation` for each, in a worker thread so the event loop keeps running (z3
    releases the interpreter lock while it solves)."""
    return await asyncio.to_thread(lambda: [check_derivation(d, timeout_ms) for d in derivations])


def logical_validity(checks: Sequence[DerivationCheck]) -> float | None:
    """S_LV: valid derivations over the measured ones (valid, invalid, inconsistent, circular);
    None when none is measured (no derivations, or every one unparsed or timed out)."""
    measured = [check for check in checks if check.status in MEASURED]
    if not measured:
        return None
    return sum(check.valid for check in measured) / len(measured)


# ----------------------------------------------------------------------------- derivations as text

_TURNSTILE = re.compile(r"\|-|⊢")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
KEYWORDS = frozenset({"forall", "exists"})


class LineCheck(BaseModel):
    """The verdict on one derivation line of a file (`argtui logic check`)."""

    model_config = ConfigDict(frozen=True)

    line: int
    text: str
    verdict: Status
    # unparsed: "line:column: what is wrong" (in the file); timeout: z3's reason; invalid: why no counter-model
    error: str | None = None
    counter_model: CounterModel | None = None


def _split_derivation(text: str, where: str) -> tuple[list[tuple[str, int]], tuple[str, int]]:
    """A derivation line's premises and conclusion, each (formula, 0-based offset in the line);
    a line without exactly one turnstile, or over the line's limits, is a `FormulaError`."""
    turnstiles = list(_TURNSTILE.finditer(text))
    if len(turnstiles) != 1:
        at = turnstiles[1].start() + 1 if turnstiles else 1
        problem = "a second turnstile" if turnstiles else "no turnstile between the premises and the conclusion"
        raise FormulaError(text, where, 1, at, problem, ["one '|-' (or '⊢'): premise ; premise |- conclusion"])
    turnstile = turnstiles[0]

    def formulas(start: int, end: int, separated: bool) -> list[tuple[str, int]]:
        part = text[start:end]
        if separated and not part.strip():
            return []
        found, offset = [], start
        for piece in part.split(";") if separated else [part]:
            found.append((piece.strip(), offset + len(piece) - len(piece.lstrip())))
            offset += len(piece) + 1
        return found

    premises = formulas(0, turnstile.start(), separated=True)
    [conclusion] = formulas(turnstile.end(), len(text), separated=False)
    if len(premises) > LINE_MAX_PREMISES:
        raise FormulaError(text, where, 1, premises[LINE_MAX_PREMISES][1] + 1,
                           f"{len(premises)} premises; a line may have at most {LINE_MAX_PREMISES}")
    for (formula, offset), which in zip([*premises, conclusion], _wheres(len(premises))):
        if len(formula) > LINE_FORMULA_MAX_CHARS:
            raise FormulaError(text, where, 1, offset + 1, f"{which} has {len(formula):,} characters; "
                               f"a formula may have at most {LINE_FORMULA_MAX_CHARS}")
    return premises, conclusion


def parse_derivation_line(line: str, where: str = "derivation") -> WrittenDerivation:
    """The derivation written ``premise ; premise |- conclusion`` (``⊢`` too); a line without
    exactly one turnstile, or over the line's limits, is a `FormulaError`. The formulas are
    parsed by `check_derivation`."""
    premises, (conclusion, _) = _split_derivation(line, where)
    return WrittenDerivation(premises=tuple(formula for formula, _ in premises), conclusion=conclusion)


def check_line(text: str, number: int = 1, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> LineCheck:
    """The verdict on the derivation written on line `number` of a file; a parse error, or a line
    over the limits, is the verdict ``unparsed`` with its line and column in the file."""
    try:
        premises, conclusion = _split_derivation(text, "derivation")
    except FormulaError as exc:
        return LineCheck(line=number, text=text, verdict="unparsed", error=f"{number}:{exc.column}: {exc.reason}")
    derivation = WrittenDerivation(premises=tuple(formula for formula, _ in premises), conclusion=conclusion[0])
    check = check_derivation(derivation, timeout_ms)
    error = check.error
    if check.formula_error is not None:
        exc = check.formula_error
        offsets = [offset for _, offset in premises] + [conclusion[1]]
        error = f"{number}:{offsets[_wheres(len(premises)).index(exc.where)] + exc.column}: {exc.where}: {exc.reason}"
    return LineCheck(line=number, text=text, verdict=check.status, error=error, counter_model=check.counter_model)


def check_lines(lines: Iterable[str], timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Iterator[LineCheck]:
    """`check_line` for each line that holds a derivation, each verdict given as soon as it is
    decided: blank lines and ``#`` comments are skipped."""
    return (
        check_line(line.rstrip("\r\n"), number, timeout_ms) for number, line in enumerate(lines, start=1)
        if line.strip() and not line.lstrip().startswith("#")
    )


def name_words(name: str) -> list[str]:
    """A predicate's or constant's name as lower-case words: "BansCars" → ["bans", "cars"]."""
    return [word.lower() for word in _NAME_WORD.findall(name)]


def derivation_words(d: Derivation) -> str:
    """The words of the names a derivation's formulas use, for a derivation that quotes no text."""
    names = [name for formula in (*d.premises, d.conclusion) for name in _NAME.findall(formula)]
    return " ".join(word for name in names if name not in KEYWORDS for word in name_words(name))


def _formula_key(formula: str) -> Node | str:
    try:
        return parse_formula(formula)
    except FormulaError:
        return formula.strip()


def is_prompt_example(d: Derivation) -> bool:
    """Whether `d` is one of the translation prompt's examples (the same formulas): an echo, not the argument's."""
    key = [_formula_key(f) for f in (*d.premises, d.conclusion)]
    return any(
        key == [_formula_key(f) for f in (*example.derivation.premises, example.derivation.conclusion)]
        for example in EXAMPLES
    )


async def translate(client: LLMClient, argument: str, topic: str) -> Structured[LogicTranslation]:
    """The model's derivations for `argument` in one schema-constrained call (greedy, so a
    rerun gives the cached answer)."""
    schema = translation_schema(argument)
    [result] = await client.structured(
        logic_messages(topic, argument), schema, Sampling(temperature=0.0, max_tokens=max_tokens_for(schema)),
    )
    return result
