"""InspireScore's logical validity: formulas as a model writes them go through the parser and
z3. Valid argument forms hold and fallacies do not, precedence and quantifier scope read as
documented, malformed formulas and arity clashes give a positioned error (never a crash, also
for random text), an undecidable-in-time check comes back as `timeout` without holding the
event loop, S_LV counts, and the real model's translation is a readable result."""

from __future__ import annotations

import asyncio
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark import Lark

from engines.inspire.logic import (
    FORMULA_MAX_CHARS,
    GRAMMAR,
    LOGIC_PROMPT,
    MAX_PREMISES,
    Derivation,
    DerivationCheck,
    LogicTranslation,
    check_derivation,
    check_derivations,
    logical_validity,
    translate,
)
from engines.llm.client import LLMClient
from engines.llm.types import Structured


def check(premises: list[str], conclusion: str, timeout_ms: int = 2000) -> DerivationCheck:
    return check_derivation(Derivation(premises=premises, conclusion=conclusion), timeout_ms)


VALID_FORMS = {
    "modus ponens": (["Raining -> WetStreets", "Raining"], "WetStreets"),
    "modus tollens": (["forall x. Subsidised(x) -> Cheap(x)", "~Cheap(coal)"], "~Subsidised(coal)"),
    "universal instantiation": (["forall x. Human(x) -> Mortal(x)", "Human(socrates)"], "Mortal(socrates)"),
    "hypothetical syllogism": (["BanCars -> LessTraffic", "LessTraffic -> CleanerAir"], "BanCars -> CleanerAir"),
    "disjunctive syllogism": (["TaxCarbon(eu) | CapEmissions(eu)", "~TaxCarbon(eu)"], "CapEmissions(eu)"),
    "unicode symbols": (["∀x (City(x) ∧ BansCars(x) → CleanAir(x))", "City(paris) ∧ BansCars(paris)"],
                        "CleanAir(paris)"),
    "existential generalisation": (["Bans(paris, cars)"], "exists x. Bans(x, cars)"),
    "biconditional": (["Fair <-> Equal", "~Equal"], "¬Fair"),
}

INVALID_FORMS = {
    "affirming the consequent": (["TaxesRise -> PricesRise", "PricesRise"], "TaxesRise"),
    "denying the antecedent": (["forall x. Human(x) -> Mortal(x)", "~Human(zeus)"], "~Mortal(zeus)"),
    "undistributed middle": (["forall x. Cat(x) -> Mammal(x)", "forall x. Dog(x) -> Mammal(x)"],
                             "forall x. Cat(x) -> Dog(x)"),
    "existential to universal": (["exists x. Corrupt(x)"], "forall x. Corrupt(x)"),
    "quantifier swap": (["forall x. exists y. Trusts(x, y)"], "exists y. forall x. Trusts(x, y)"),
}


@pytest.mark.parametrize("form", sorted(VALID_FORMS))
def test_valid_forms_hold(form):
    premises, conclusion = VALID_FORMS[form]
    result = check(premises, conclusion)
    assert (result.status, result.error) == ("valid", None)


@pytest.mark.parametrize("form", sorted(INVALID_FORMS))
def test_fallacies_do_not_hold(form):
    premises, conclusion = INVALID_FORMS[form]
    result = check(premises, conclusion)
    assert (result.status, result.error) == ("invalid", None)


@pytest.mark.parametrize(
    "premises, conclusion, status",
    [
        # & binds tighter than |: P | (Q & R), which gives P | Q but not R.
        (["P | Q & R"], "P | Q", "valid"),
        (["P | Q & R"], "R", "invalid"),
        # -> groups to the right: P -> (Q -> R).
        (["P -> Q -> R", "P", "Q"], "R", "valid"),
        (["P -> Q -> R"], "(P -> Q) -> R", "invalid"),
        # ~ binds tighter than &.
        (["~P & Q"], "Q", "valid"),
        # A quantifier reaches as far right as possible, also after a connective.
        (["forall x. A(x) -> B(x)", "A(c)"], "B(c)", "valid"),
        (["Q & forall x. A(x) -> B(x)", "A(c)"], "B(c)", "valid"),
        (["(forall x. A(x)) -> B(c)", "A(c)"], "B(c)", "invalid"),
        # The dot is optional; several variables in one quantifier.
        (["forall x y Parent(x, y) -> Older(x, y)", "Parent(ann, bob)"], "Older(ann, bob)", "valid"),
        # An unbound lower-case name is a constant, and a bound name shadows it.
        (["Tall(x)"], "forall x. Tall(x)", "invalid"),
        # Capitalised and lower-case constants are different entities.
        (["Rich(Paris)"], "Rich(paris)", "invalid"),
        (["Raining()"], "Raining", "valid"),
    ],
)
def test_precedence_and_scope_read_as_documented(premises, conclusion, status):
    assert check(premises, conclusion).status == status


def test_the_grammar_has_no_lalr_conflicts(caplog):
    # Lark resolves shift/reduce conflicts silently (as shift); with debug on it logs each.
    caplog.set_level(logging.DEBUG, logger="lark")
    Lark(GRAMMAR, parser="lalr", debug=True)
    assert [r.getMessage() for r in caplog.records if "conflict" in r.getMessage().lower()] == []


@pytest.mark.parametrize(
    "premises, conclusion, where, position, expected",
    [
        ([], "Mortal(socrates", "conclusion", "line 1, column 16", "expected ')', ','"),
        (["Rich(a) &\n   & Poor(b)"], "Rich(a)", "premise 1", "line 2, column 4", "a predicate"),
        (["P", "Q $ R"], "P", "premise 2", "line 1, column 3", "'&'"),
        (["forall . Good(x)"], "P", "premise 1", "line 1, column 8", "a variable"),
        (["mortal(socrates)"], "P", "premise 1", "line 1, column 1", "a predicate (a capitalised name)"),
        (["P"], "Mortal(a,)", "conclusion", "line 1, column 10", "a variable or constant"),
        (["P"], "   ", "conclusion", "line 1, column 4", "a quantifier"),
    ],
)
def test_a_malformed_formula_is_unparsed_with_its_position_and_what_was_expected(
    premises, conclusion, where, position, expected
):
    result = check(premises, conclusion)
    assert result.status == "unparsed"
    assert result.error.startswith(where) and position in result.error and expected in result.error


def test_an_arity_clash_names_both_uses():
    result = check(["forall x. Man(x) -> Mortal(x)", "Man(socrates, athens)"], "Mortal(socrates)")
    assert result.status == "unparsed"
    assert result.error.startswith("premise 2") and "line 1, column 1" in result.error
    assert "Man takes 2 argument(s) here but 1 in premise 1 (line 1, column 11)" in result.error


def test_an_arity_clash_in_the_conclusion_is_reported_too():
    result = check(["Raining"], "Raining(london)")
    assert result.status == "unparsed" and result.error.startswith("conclusion")


# Well-formed random formulas over predicates of fixed arity.
TERMS = st.sampled_from(["a", "b", "x", "y", "Socrates"])
ATOMS = st.one_of(
    st.sampled_from(["P", "Q", "R()"]),
    st.builds("A({})".format, TERMS),
    st.builds("B({}, {})".format, TERMS, TERMS),
)


def _compound(inner):
    return st.one_of(
        st.builds("~{}".format, inner),
        st.builds("({} {} {})".format, inner, st.sampled_from(["&", "|", "->", "<->", "∧", "∨", "→"]), inner),
        st.builds("({} {}. {})".format, st.sampled_from(["forall", "exists", "∀", "∃"]), st.sampled_from("xy"), inner),
    )


# Short enough that "φ | ~(φ)" is still a formula a derivation holds.
FORMULAS = st.recursive(ATOMS, _compound, max_leaves=8).filter(lambda f: 2 * len(f) + 6 <= FORMULA_MAX_CHARS)


FORMULA_ALPHABET = "PQRabxy() ,.~!&|-><=∀∃¬∧∨→↔\n" + "forallexists"


@st.composite
def mutated_formulas(draw):
    """A well-formed formula with a random stretch replaced: some parse, most do not."""
    formula = draw(FORMULAS)
    start = draw(st.integers(0, len(formula)))
    end = draw(st.integers(start, len(formula)))
    return (formula[:start] + draw(st.text(FORMULA_ALPHABET, max_size=3)) + formula[end:])[:FORMULA_MAX_CHARS]


RANDOM_TEXT = st.one_of(st.text(max_size=FORMULA_MAX_CHARS), st.text(FORMULA_ALPHABET, max_size=40))


def assert_checked(result: DerivationCheck) -> None:
    assert isinstance(result, DerivationCheck)
    assert result.status in ("valid", "invalid", "unparsed", "timeout")
    assert (result.error is not None) == (result.status in ("unparsed", "timeout"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(premises=st.lists(RANDOM_TEXT, max_size=MAX_PREMISES), conclusion=RANDOM_TEXT)
def test_random_text_never_crashes_the_check(premises, conclusion):
    assert_checked(check(premises, conclusion, timeout_ms=200))


# About one in ten of these derivations parses and reaches z3.
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(premises=st.lists(mutated_formulas(), max_size=2), conclusion=mutated_formulas())
def test_damaged_formulas_never_crash_the_check(premises, conclusion):
    assert_checked(check(premises, conclusion, timeout_ms=200))


@settings(max_examples=150, deadline=None)
@given(formula=FORMULAS)
def test_every_well_formed_formula_entails_itself_and_the_excluded_middle_holds(formula):
    result = check([formula], formula)
    assert (result.status, result.error) == ("valid", None)
    assert check([], f"{formula} | ~({formula})").status == "valid"


# Less is a strict order without a largest element: only infinite models satisfy it, so z3
# finds no countermodel for the unrelated conclusion, and cannot refute one either.
NO_FINITE_MODEL = Derivation(
    premises=[
        "forall x. exists y. Less(x, y)",
        "forall x y z. Less(x, y) & Less(y, z) -> Less(x, z)",
        "forall x. ~Less(x, x)",
    ],
    conclusion="Unrelated",
)


def test_an_undecidable_in_time_check_comes_back_as_timeout():
    result = check_derivation(NO_FINITE_MODEL, timeout_ms=300)
    assert result.status == "timeout" and result.error.startswith("z3: ")


async def test_checks_run_off_the_event_loop_while_z3_works():
    ticks = 0

    async def tick():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    try:
        results = await check_derivations([NO_FINITE_MODEL, Derivation(premises=["P"], conclusion="P")], 500)
    finally:
        ticker.cancel()
    assert [r.status for r in results] == ["timeout", "valid"]
    assert ticks >= 10  # the loop kept running during the half-second z3 spent on the first one


def test_a_timeout_must_be_positive():
    with pytest.raises(ValueError, match="timeout_ms"):
        check_derivation(Derivation(premises=[], conclusion="P"), timeout_ms=0)


def test_logical_validity_is_the_share_of_valid_derivations():
    derivation = Derivation(premises=[], conclusion="P")
    checks = [
        DerivationCheck(derivation, status)
        for status in ("valid", "valid", "invalid", "unparsed", "timeout")
    ]
    assert logical_validity(checks) == pytest.approx(2 / 5)
    assert logical_validity(checks[:2]) == 1.0
    assert logical_validity(checks[2:]) == 0.0
    assert logical_validity([]) is None


def test_a_derivation_from_checks_counts_every_outcome():
    forms = [*VALID_FORMS.values(), *INVALID_FORMS.values(), ([], "Broken(")]
    checks = [check(premises, conclusion) for premises, conclusion in forms]
    assert logical_validity(checks) == pytest.approx(len(VALID_FORMS) / len(forms))


def test_the_schema_bounds_what_the_model_writes():
    schema = LogicTranslation.model_json_schema()
    derivation = schema["$defs"]["Derivation"]["properties"]
    assert schema["properties"]["derivations"]["maxItems"] >= 1
    assert derivation["premises"]["maxItems"] == MAX_PREMISES
    assert derivation["conclusion"]["maxLength"] == FORMULA_MAX_CHARS
    assert "forall x." in LOGIC_PROMPT and "->" in LOGIC_PROMPT


@pytest.mark.llm
async def test_the_real_model_translates_an_argument_into_a_readable_result(llama_profile):
    argument = (
        "Every city that bans cars from its centre gets cleaner air. "
        "Oslo banned cars from its centre, so Oslo has cleaner air."
    )
    async with LLMClient(llama_profile.model_copy(update={"timeout_s": 300.0})) as client:
        result = await translate(client, argument, "Cities should ban cars from their centres")
    assert isinstance(result, Structured) and result.raw
    if result.valid:
        assert isinstance(result.value, LogicTranslation)
        checks = await check_derivations(result.value.derivations)
        assert all(c.status in ("valid", "invalid", "unparsed", "timeout") for c in checks)
    else:
        assert result.error  # kept with the raw text, never raised
