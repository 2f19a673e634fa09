"""InspireScore's logical validity: derivations in a small first-order syntax, checked by z3.

A model translates an argument into derivations (`translate`): premises and a conclusion,
each a formula. A derivation is valid when its premises entail its conclusion, that is when
premises ∧ ¬conclusion is unsatisfiable (`check_derivation`). S_LV is the share of valid
derivations (`logical_validity`); a derivation that does not parse, or whose check runs out
of time, counts as not valid.

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
  the quantifier.
* Quantifiers: ``forall x. φ`` and ``exists x. φ`` (also ``∀x. φ``, ``∃x. φ``); several
  variables at once: ``forall x y. φ``; the dot is optional: ``∀x (P(x) → Q(x))``. The scope
  of a quantifier reaches as far right as possible: ``forall x. A(x) -> B(x)`` is
  ``forall x. (A(x) -> B(x))``.
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
N or the conclusion), the line and column, and what was expected there.

The solver: z3 over one uninterpreted sort ``Entity`` (non-empty), each predicate a function
from ``Entity``ⁿ to Bool. Each check gets its own z3 context, so checks may run in threads at
once (`check_derivations` runs them off the event loop), and a time limit (z3's ``timeout``):
a check z3 cannot decide in time, or at all (``unknown``), counts as ``timeout``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Literal, Sequence

import z3
from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedToken
from pydantic import BaseModel, Field

from engines.errors import ArgtuiError
from engines.inspire.logic_prompts import LOGIC_PROMPT, logic_prompt
from engines.llm.budget import max_tokens_for
from engines.llm.client import LLMClient
from engines.llm.profile import Sampling
from engines.llm.types import Structured
from engines.timing import Stopwatch

__all__ = [
    "LOGIC_PROMPT", "Derivation", "DerivationCheck", "FormulaError", "LogicTranslation", "Status",
    "check_derivation", "check_derivations", "logical_validity", "parse_formula", "translate",
]

DEFAULT_TIMEOUT_MS = 2000
# Bounds on what the model writes: they cap the schema's longest answer, so max_tokens.
MAX_DERIVATIONS = 4
MAX_PREMISES = 4
FORMULA_MAX_CHARS = 160
TEXT_MAX_CHARS = 240

Formula = Annotated[str, Field(max_length=FORMULA_MAX_CHARS)]


class Derivation(BaseModel):
    """One step of an argument: what the model writes. `text` comes first in the schema so the
    model quotes the step before it formalises it."""

    text: str = Field("", max_length=TEXT_MAX_CHARS)  # the sentence(s) of the argument it formalises
    premises: list[Formula] = Field(max_length=MAX_PREMISES)
    conclusion: Formula


class LogicTranslation(BaseModel):
    derivations: list[Derivation] = Field(max_length=MAX_DERIVATIONS)


Status = Literal["valid", "invalid", "unparsed", "timeout"]


@dataclass(frozen=True)
class DerivationCheck:
    derivation: Derivation
    status: Status
    error: str | None = None  # unparsed: the parse error with its position; timeout: z3's reason
    seconds: float = 0.0

    @property
    def valid(self) -> bool:
        return self.status == "valid"


class FormulaError(ArgtuiError):
    """A formula that does not parse, or uses a predicate with two arities."""

    def __init__(self, formula: str, where: str, line: int, column: int, problem: str,
                 expected: Sequence[str] = ()):
        self.formula, self.where, self.line, self.column = formula, where, line, column
        self.problem, self.expected = problem, tuple(expected)
        wanted = f"; expected {', '.join(self.expected)}" if self.expected else ""
        super().__init__(f"{where} {formula!r}, line {line}, column {column}: {problem}{wanted}")


# ----------------------------------------------------------------------------- syntax tree


@dataclass(frozen=True)
class Atom:
    predicate: str
    arguments: tuple[str, ...]
    line: int
    column: int


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
VARIABLE: /[a-z][A-Za-z0-9_]*/
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


def check_derivation(d: Derivation, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> DerivationCheck:
    """Whether `d`'s premises entail its conclusion, decided by z3 within `timeout_ms`."""
    if timeout_ms <= 0:
        raise ValueError(f"timeout_ms must be positive, not {timeout_ms}")
    stopwatch = Stopwatch()
    sources = [(p, f"premise {i}") for i, p in enumerate(d.premises, start=1)] + [(d.conclusion, "conclusion")]
    try:
        trees = [(text, where, parse_formula(text, where)) for text, where in sources]
        arities = _arities(trees)
    except FormulaError as exc:
        return DerivationCheck(d, "unparsed", str(exc), stopwatch.seconds)
    context = z3.Context()
    translation = _Z3Translation(context, arities)
    *premises, conclusion = (translation.formula(tree, {}) for _, _, tree in trees)
    solver = z3.Solver(ctx=context)
    solver.set("timeout", timeout_ms)
    solver.add(*premises, z3.Not(conclusion, context))
    outcome = solver.check()
    seconds = stopwatch.seconds
    if outcome == z3.unsat:
        return DerivationCheck(d, "valid", None, seconds)
    if outcome == z3.sat:
        return DerivationCheck(d, "invalid", None, seconds)
    return DerivationCheck(d, "timeout", f"z3: {solver.reason_unknown()}", seconds)


async def check_derivations(
    derivations: Sequence[Derivation], timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> list[DerivationCheck]:
    """`check_derivation` for each, in a worker thread so the event loop keeps running (z3
    releases the interpreter lock while it solves)."""
    return await asyncio.to_thread(lambda: [check_derivation(d, timeout_ms) for d in derivations])


def logical_validity(checks: Sequence[DerivationCheck]) -> float | None:
    """S_LV: valid derivations over all of them (unparsed and timeout count as not valid); None
    when there are none."""
    if not checks:
        return None
    return sum(check.valid for check in checks) / len(checks)


async def translate(client: LLMClient, argument: str, topic: str) -> Structured[LogicTranslation]:
    """The model's derivations for `argument` in one schema-constrained call (greedy, so a
    rerun gives the cached answer)."""
    [result] = await client.structured(
        [{"role": "user", "content": logic_prompt(topic, argument)}], LogicTranslation,
        Sampling(temperature=0.0, max_tokens=max_tokens_for(LogicTranslation)),
    )
    return result
