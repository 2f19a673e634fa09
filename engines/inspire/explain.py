"""A checked derivation in words a student reads: what it says ("From … it follows that …"),
its formula written out once more (`formula_text`), and what the solver found.

Formulas are read deterministically, not by a model: a predicate's CamelCase name becomes
lower-case words, its first argument the subject ("BansCars(paris)" → "paris bans cars",
"Mortal(socrates)" → "socrates is mortal"), and the connectives and quantifiers plain phrases
("forall x. Man(x) -> Mortal(x)" → "every x that is man is mortal").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engines.inspire.logic import (
    Atom,
    Binary,
    FormulaError,
    Node,
    Not,
    Quantified,
    formula_text,
    name_words,
    parse_formula,
)

if TYPE_CHECKING:  # the records are the score module's, which explains its weakest dimension with this one
    from engines.inspire.score import DerivationRecord

# A predicate whose first word is one of these, or a verb in the third person (ends in "s"),
# reads as a verb phrase: "x can vote", "paris bans cars"; any other as "x is …".
AUXILIARIES = frozenset("is are was were has have had can could will would should must may might does did".split())
NOT_VERB_ENDINGS = ("ss", "us", "is", "ous")
OWN_NEGATIONS = {"has": "does not have", "have": "do not have", "had": "did not have"}


def _verb_like(first: str) -> bool:
    return first in AUXILIARIES or (first.endswith("s") and not first.endswith(NOT_VERB_ENDINGS))


def _negated_verb(first: str) -> str:
    """The negation of a verb in the third person: "bans" → "does not ban", "can" → "can not"."""
    if first in OWN_NEGATIONS:
        return OWN_NEGATIONS[first]
    if first in AUXILIARIES:
        return f"{first} not"
    if first.endswith("ies"):
        return f"does not {first[:-3]}y"
    if first.endswith(("shes", "ches", "xes", "sses", "oes", "zes")):
        return f"does not {first[:-2]}"
    return f"does not {first[:-1]}"


def _predicate_phrase(atom: Atom, negated: bool = False) -> str:
    """The atom without its subject: "bans cars", "is mortal", with "not" where `negated`."""
    words = name_words(atom.predicate) or [atom.predicate.lower()]
    first, rest = words[0], words[1:]
    if _verb_like(first):
        head = _negated_verb(first) if negated else first
    else:
        head, rest = ("is not" if negated else "is"), words
    objects = atom.arguments[1:]
    parts = [head, *rest]
    if objects:
        parts += [*([] if _verb_like(first) else ["of"]), " and ".join(objects)]
    return " ".join(parts)


def _atom_words(atom: Atom, negated: bool = False) -> str:
    if not atom.arguments:  # a statement: "TaxesRise" → "taxes rise"
        said = " ".join(name_words(atom.predicate)) or atom.predicate
        return f"it is not the case that {said}" if negated else said
    return f"{atom.arguments[0]} {_predicate_phrase(atom, negated)}"


def _words(node: Node) -> str:
    if isinstance(node, Atom):
        return _atom_words(node)
    if isinstance(node, Not):
        if isinstance(node.operand, Atom):
            return _atom_words(node.operand, negated=True)
        return f"it is not the case that {_words(node.operand)}"
    if isinstance(node, Binary):
        left, right = _words(node.left), _words(node.right)
        if node.connective == "implies":
            return f"if {left}, then {right}"
        if node.connective == "iff":
            return f"{left} if and only if {right}"
        return f"{left} {node.connective} {right}"  # "and", "or"
    return _quantified_words(node)


def _about_one(node: Node, variable: str) -> bool:
    return isinstance(node, Atom) and len(node.arguments) == 1 and node.arguments[0] == variable


def _quantified_words(node: Quantified) -> str:
    variables = " and ".join(node.variables)
    body = node.body
    # "every x that is man is mortal", "some x that is a city bans cars": the common forms.
    if len(node.variables) == 1 and isinstance(body, Binary) and _about_one(body.left, node.variables[0]) \
            and _about_one(body.right, node.variables[0]):
        kind = {"forall": "implies", "exists": "and"}[node.quantifier]
        if body.connective == kind:
            which = "every" if node.quantifier == "forall" else "some"
            return f"{which} {variables} that {_predicate_phrase(body.left)} {_predicate_phrase(body.right)}"
    which = "every" if node.quantifier == "forall" else "some"
    return f"for {which} {variables}, {_words(body)}"


def formula_words(formula: str) -> str:
    """A formula in words; one that does not parse is quoted as it is."""
    try:
        return _words(parse_formula(formula))
    except FormulaError:
        return f"“{formula.strip()}”"


def derivation_sentence(record: DerivationRecord) -> str:
    """The derivation in words: "From <premises> it follows that <conclusion>."."""
    conclusion = formula_words(record.conclusion)
    if not record.premises:
        return f"From no premises at all it follows that {conclusion}."
    premises = [formula_words(p) for p in record.premises]
    joined = premises[0] if len(premises) == 1 else "; ".join(premises[:-1]) + "; and " + premises[-1]
    return f"From {joined} it follows that {conclusion}."


def derivation_formula(record: DerivationRecord) -> str:
    """The derivation as one line of formulas, each written out in Unicode where it parses."""
    def shown(formula: str) -> str:
        try:
            return formula_text(parse_formula(formula), "unicode")
        except FormulaError:
            return formula.strip()

    return f"{'; '.join(shown(p) for p in record.premises)} ⊢ {shown(record.conclusion)}".strip()


def verdict_sentence(record: DerivationRecord) -> str:
    """What the solver found, in one sentence."""
    if record.status == "valid":
        return "This follows."
    if record.status == "invalid":
        example = f", {record.counter_model.sentence()}" if record.counter_model else ""
        return f"Your premises can all be true while the conclusion is false{example}."
    if record.status == "inconsistent":
        return "Your premises contradict each other, so they prove anything."
    if record.status == "circular":
        return "The conclusion only restates a premise."
    if record.status == "unparsed":
        return "This step could not be formalised."
    return "The solver could not decide in time."
