"""InspireScore's logical validity: formulas as a model writes them go through the parser and
z3. Valid argument forms hold and fallacies do not (with a counter-model), quantifiers read
alike in every form and print back to the same tree, contradictory premises are inconsistent
and a restated premise circular, precedence and quantifier scope read as documented, malformed
formulas and arity clashes give a positioned error (never a crash, also for random text), an
undecidable-in-time check comes back as `timeout` without holding the event loop, S_LV counts
only measured checks, derivations not about the text are dropped, the verdicts read in words,
and the real model's translation is a readable result."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark import Lark

from engines.inspire.explain import derivation_formula, derivation_sentence, verdict_sentence
from engines.inspire.logic import (
    FORMULA_MAX_CHARS,
    GRAMMAR,
    LINE_FORMULA_MAX_CHARS,
    LINE_MAX_PREMISES,
    LOGIC_PROMPT,
    MAX_FACTS,
    MAX_PREMISES,
    TOO_LARGE,
    Atom,
    Binary,
    CounterModel,
    Derivation,
    DerivationCheck,
    FormulaError,
    LogicTranslation,
    Node,
    Not,
    Quantified,
    Status,
    WrittenDerivation,
    check_derivation,
    check_derivations,
    check_line,
    check_lines,
    formula_text,
    logical_validity,
    parse_derivation_line,
    parse_formula,
    translate,
)
from engines.inspire.logic_prompts import EXAMPLES
from engines.inspire.score import DerivationRecord, check_logic
from engines.llm.client import LLMClient
from engines.llm.types import Structured
from fakes import FakeServer, chat_reply


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
        # The same tree whichever way it is written: the conclusion restates the premise.
        (["Raining()"], "Raining", "circular"),
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
    assert result.status in get_args(Status)
    assert (result.error is not None) == (result.status in ("unparsed", "timeout"))
    assert (result.counter_model is not None) == (result.status == "invalid")


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
def test_a_well_formed_formula_restating_itself_is_circular_and_the_excluded_middle_holds(formula):
    result = check([formula], formula)
    assert (result.status, result.error) == ("circular", None)
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
        results = await check_derivations([NO_FINITE_MODEL, Derivation(premises=["P & Q"], conclusion="P")], 500)
    finally:
        ticker.cancel()
    assert [r.status for r in results] == ["timeout", "valid"]
    assert ticks >= 10  # the loop kept running during the half-second z3 spent on the first one


def test_a_timeout_must_be_positive():
    with pytest.raises(ValueError, match="timeout_ms"):
        check_derivation(Derivation(premises=[], conclusion="P"), timeout_ms=0)


def test_logical_validity_is_the_share_of_valid_derivations_among_the_measured_ones():
    derivation = Derivation(premises=[], conclusion="P")
    checks = [
        DerivationCheck(derivation, status)
        for status in ("valid", "valid", "invalid", "inconsistent", "circular", "unparsed", "timeout")
    ]
    assert logical_validity(checks) == pytest.approx(2 / 5)  # unparsed and timeout are not measured
    assert logical_validity(checks[:2]) == 1.0
    assert logical_validity(checks[2:]) == 0.0
    # Nothing measured is "not measured", not 0: a translation that failed says nothing of the argument.
    assert logical_validity(checks[5:]) is None
    assert logical_validity([]) is None


def test_a_derivation_from_checks_counts_every_measured_outcome():
    forms = [*VALID_FORMS.values(), *INVALID_FORMS.values(), ([], "Broken(")]
    checks = [check(premises, conclusion) for premises, conclusion in forms]
    assert logical_validity(checks) == pytest.approx(len(VALID_FORMS) / (len(forms) - 1))


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
        assert all(c.status in get_args(Status) for c in checks)
    else:
        assert result.error  # kept with the raw text, never raised


# ----------------------------------------------------------------------------- quantifiers in every form


@pytest.mark.parametrize(
    "premise, conclusion, status",
    [
        # ∀x∃y does not give ∀x∀y: the second quantifier is a quantifier, not a variable named "exists".
        ("forall x exists y. Loves(x,y)", "forall x y. Loves(x,y)", "invalid"),
        # ∃x∀y gives ∀y∃x.
        ("exists x forall y. Loves(y,x)", "forall y. exists x. Loves(y,x)", "valid"),
        ("∀x ∃y Loves(x, y)", "∀x ∀y Loves(x, y)", "invalid"),
        ("exists x forall y Loves(y, x)", "forall y exists x Loves(y, x)", "valid"),
    ],
)
def test_the_order_of_quantifiers_counts_in_every_form(premise, conclusion, status):
    assert check([premise], conclusion).status == status


FORALL_EXISTS = Quantified("forall", ("x",), Quantified("exists", ("y",), Atom("Loves", ("x", "y"))))


@pytest.mark.parametrize(
    "written",
    ["forall x exists y Loves(x, y)", "forall x exists y. Loves(x, y)", "forall x. exists y. Loves(x, y)",
     "∀x ∃y Loves(x, y)", "∀x∃y Loves(x,y)", "∀x. ∃y. Loves(x, y)", "forall x (exists y (Loves(x, y)))",
     "forall x ∃y Loves(x, y)"],
)
def test_nested_quantifiers_parse_alike_with_or_without_dots(written):
    assert parse_formula(written) == FORALL_EXISTS


@pytest.mark.parametrize("written", ["Loves(exists, x)", "forall exists. P(exists)", "exists forall P"])
def test_the_quantifier_words_are_never_names(written):
    with pytest.raises(FormulaError):
        parse_formula(written)


# Names that begin with a quantifier's word are still names.
TREE_NAMES = st.sampled_from(["x", "y", "paris", "Socrates", "existsx", "forall_"])
TREE_VARIABLES = st.sampled_from(["x", "y", "z", "existsx", "forall_"])
TREE_ATOMS = st.builds(
    Atom, st.sampled_from(["P", "Q", "Loves", "BansCars"]), st.lists(TREE_NAMES, max_size=2).map(tuple)
)


def _subtrees(inner):
    return st.one_of(
        st.builds(Not, inner),
        st.builds(Binary, st.sampled_from(["and", "or", "implies", "iff"]), inner, inner),
        st.builds(Quantified, st.sampled_from(["forall", "exists"]),
                  st.lists(TREE_VARIABLES, min_size=1, max_size=2).map(tuple), inner),
    )


TREES = st.recursive(TREE_ATOMS, _subtrees, max_leaves=10)


@settings(max_examples=300, deadline=None)
@given(tree=TREES)
def test_a_tree_printed_in_ascii_unicode_and_dotted_forms_parses_back_to_the_same_tree(tree: Node):
    for style in ("ascii", "unicode", "dotted"):
        written = formula_text(tree, style)
        assert parse_formula(written) == tree, (style, written)


def test_the_three_styles_write_what_they_say():
    assert formula_text(FORALL_EXISTS, "ascii") == "forall x exists y Loves(x, y)"
    assert formula_text(FORALL_EXISTS, "unicode") == "∀x ∃y Loves(x, y)"
    assert formula_text(FORALL_EXISTS, "dotted") == "forall x. exists y. Loves(x, y)"
    assert formula_text(parse_formula("(A -> B) -> ~(C | D) & E"), "unicode") == "(A → B) → ¬(C ∨ D) ∧ E"


# ----------------------------------------------------------------------------- verdicts and counter-models


def test_affirming_the_consequent_is_invalid_with_a_counter_model_naming_its_atoms():
    result = check(["TaxesRise -> PricesRise", "PricesRise"], "TaxesRise")
    assert result.status == "invalid"
    assert result.counter_model == CounterModel(true=("PricesRise",), false=("TaxesRise",))
    assert result.counter_model.sentence() == "e.g. when PricesRise is true and TaxesRise is false"


def test_a_first_order_counter_model_names_the_constants():
    result = check(["forall x. Man(x) -> Mortal(x)", "Mortal(socrates)"], "Man(socrates)")
    model = result.counter_model
    assert result.status == "invalid"
    assert model.constants == {"socrates": "socrates"} and "socrates" in model.universe
    assert "Mortal(socrates)" in model.true and "Man(socrates)" in model.false
    assert model.sentence().startswith("e.g. when Mortal(socrates) is true and Man(socrates) is false")


def test_a_counter_model_lists_at_most_four_entities_and_says_what_it_left_out():
    # Six constants, told apart by three predicates (a = 000, b = 001, …): six entities, the facts of four listed.
    premises = ["~X(a) & ~Y(a) & ~Z(a) & ~X(b) & ~Y(b) & Z(b) & ~X(c) & Y(c) & ~Z(c)",
                "~X(d) & Y(d) & Z(d) & X(e) & ~Y(e) & ~Z(e) & X(f) & ~Y(f) & Z(f)"]
    model = check(premises, "X(a)").counter_model
    assert set(model.constants) == {"a", "b", "c", "d", "e", "f"}
    assert model.universe == ("a", "b", "c", "d") and model.unlisted >= 2
    assert len(model.true) + len(model.false) == 3 * 4
    assert model.sentence().endswith(f"and the facts of {model.unlisted} more entities not shown)")
    unnamed = check(["exists x. P(x)", "exists x. ~P(x)", "exists x. Q(x) & ~P(x)"], "forall x. Q(x)").counter_model
    assert unnamed.constants == {} and all(entity.startswith("e") for entity in unnamed.universe)
    assert len(unnamed.universe) <= 4 and unnamed.sentence().startswith("e.g. in a world with e1")


def test_contradictory_premises_are_inconsistent_not_valid():
    assert check(["P", "~P"], "Q").status == "inconsistent"
    assert check(["forall x. Rich(x)", "~Rich(bob)"], "Happy(bob)").status == "inconsistent"
    # Entailed anyway, still inconsistent: the premises prove anything.
    assert check(["P", "~P"], "P | Q").status == "inconsistent"


def test_a_conclusion_that_restates_a_premise_is_circular():
    assert check(["P"], "P").status == "circular"
    assert check(["Q", "forall x. A(x) -> B(x)"], "∀x (A(x) → B(x))").status == "circular"
    # Following from a premise is not restating it.
    assert check(["P & Q"], "P").status == "valid"


# ----------------------------------------------------------------------------- derivations on lines


def test_a_derivation_line_gives_its_premises_and_conclusion():
    assert parse_derivation_line("A -> B ; A |- B") == WrittenDerivation(premises=("A -> B", "A"), conclusion="B")
    assert parse_derivation_line("  A⊢B ") == WrittenDerivation(premises=("A",), conclusion="B")
    assert parse_derivation_line("|- P | ~P") == WrittenDerivation(premises=(), conclusion="P | ~P")
    with pytest.raises(FormulaError, match="no turnstile"):
        parse_derivation_line("A ; B", "line 3")


def test_a_line_that_does_not_parse_is_unparsed_at_its_column_in_the_line():
    assert check_line("P ; Q & |- R", 7).error.startswith("7:8: premise 2: the formula ends too early")
    assert check_line("P |- Mortal(socrates", 2).error.startswith("2:21: conclusion: ")
    assert check_line(" P ;; Q |- R", 1).error.startswith("1:5: premise 2: the formula is empty")
    assert check_line("P |- Q |- R", 4).error.startswith("4:8: a second turnstile")
    assert check_line("P ; Q", 5).verdict == "unparsed"


def test_a_line_is_bounded_by_a_persons_limits_not_the_models_schema():
    six = " ; ".join(f"P{i}" for i in range(6)) + " ; " + "X" * (FORMULA_MAX_CHARS + 40) + " |- P0"
    assert 6 > MAX_PREMISES and LINE_MAX_PREMISES >= 7
    assert check_line(six, 3).verdict == "circular"  # over the model's bounds, within a person's: checked
    many = " ; ".join(f"P{i}" for i in range(LINE_MAX_PREMISES + 1)) + " |- Q"
    over = check_line(many, 9)
    column = many.index(f"P{LINE_MAX_PREMISES}") + 1
    assert over.verdict == "unparsed"
    assert over.error == f"9:{column}: {LINE_MAX_PREMISES + 1} premises; a line may have at most {LINE_MAX_PREMISES}"
    long = "Q ; " + "~" * LINE_FORMULA_MAX_CHARS + "P |- Q"
    assert check_line(long, 2).error == (f"2:5: premise 2 has {LINE_FORMULA_MAX_CHARS + 1} characters; "
                                         f"a formula may have at most {LINE_FORMULA_MAX_CHARS}")
    deepest = "~" * (LINE_FORMULA_MAX_CHARS - 1) + "P"  # the deepest nesting a line admits is checked, not a crash
    assert check_line(f"{deepest} |- {deepest}", 1).verdict == "circular"
    assert check_line(f"P |- {deepest}", 1).verdict == "invalid"
    with pytest.raises(FormulaError, match="a line may have at most"):
        parse_derivation_line(many, "your derivation")


def test_check_lines_gives_each_verdict_before_reading_the_next_line():
    def lines():
        yield "P |- P"
        raise AssertionError("the second line was read before the first verdict was given")

    assert next(check_lines(lines())).verdict == "circular"


# Four constants told apart by A and B, and a predicate of many arguments: 4^arity ground atoms.
TOLD_APART = "A(a) & B(a) & A(b) & ~B(b) & ~A(c) & B(c) & ~A(d) & ~B(d)"


@pytest.mark.parametrize("arity", [6, 40])
def test_a_counter_model_with_too_many_facts_is_not_built_and_says_so(arity):
    arguments = ", ".join("abcd"[i % 4] for i in range(arity))
    result = check([TOLD_APART, f"P({arguments})"], "Q")
    assert 4 ** arity + 9 > MAX_FACTS
    assert result.status == "invalid" and result.counter_model is None
    assert result.error.startswith(f"{TOO_LARGE} ({4 ** arity + 9:,} facts over 4 entities; at most {MAX_FACTS}")
    line = check_line(f"{TOLD_APART} ; P({arguments}) |- Q", 4)
    assert line.verdict == "invalid" and line.error.startswith(TOO_LARGE)


def test_a_counter_model_within_the_bound_is_still_shown():
    result = check([TOLD_APART, "P(a, b, c)"], "Q")  # 64 + 9 facts
    assert result.status == "invalid" and result.error is None
    assert len(result.counter_model.true) + len(result.counter_model.false) == 4 ** 3 + 9


def test_check_lines_skips_blank_lines_and_comments_and_numbers_the_rest_as_in_the_file():
    results = check_lines(["# a comment\n", "P |- P\n", "\n", "   # indented\n", "P ; ~P |- Q\r\n"])
    assert [(r.line, r.text, r.verdict) for r in results] == [
        (2, "P |- P", "circular"), (5, "P ; ~P |- Q", "inconsistent")
    ]


# ----------------------------------------------------------------------------- the student's derivations only


async def test_check_logic_drops_the_prompts_examples_and_derivations_not_about_the_text():
    # Four sentences: room for the answer's four derivations.
    text = ("More than 190 people on death row were later exonerated. An execution cannot be undone. "
            "Courts make mistakes. Nobody can give a life back.")
    student = Derivation(
        text="an execution cannot be undone", premises=["forall x. Executed(x) -> ~Undone(x)"],
        conclusion="~Undone(prisoner)",
    )
    unquoted = Derivation(premises=["Exonerated(people)"], conclusion="~Undone(execution)")  # its names are the text's
    # The example's formulas under the student's words.
    echoed = EXAMPLES[1].derivation.model_copy(update={"text": text})
    elsewhere = Derivation(text="Cars pollute city centres badly.", premises=["Pollute(cars)"], conclusion="Bad(cars)")
    answer = LogicTranslation(derivations=[student, unquoted, echoed, elsewhere]).model_dump_json()
    with FakeServer(lambda body: chat_reply(answer)) as fake:
        async with LLMClient(fake.profile(retries=0)) as client:
            result = await check_logic(client, "the death penalty", text)
    assert [c.conclusion for c in result.checks] == ["~Undone(prisoner)", "~Undone(execution)"]
    assert result.dropped == 2 and result.count("invalid") == 2 and result.score == 0.0


async def test_check_logic_drops_a_derivation_whose_quote_loops():
    """The Coach shows a derivation's quote as the student's words: a loop the model wrote is not theirs."""
    text = "An execution cannot be undone. So we should abolish the death penalty."
    student = Derivation(text="An execution cannot be undone", premises=["~Undone(execution)"],
                         conclusion="~Undone(execution)")
    looped = Derivation(text="we should abolish the death penalty. " * 4, premises=["Abolish"], conclusion="Abolish")
    answer = LogicTranslation(derivations=[student, looped]).model_dump_json()
    with FakeServer(lambda body: chat_reply(answer)) as fake:
        async with LLMClient(fake.profile(retries=0)) as client:
            result = await check_logic(client, "the death penalty", text)
    assert [c.text for c in result.checks] == ["An execution cannot be undone"] and result.dropped == 1


def test_the_prompt_is_rendered_from_its_examples():
    for number, example in enumerate(EXAMPLES, start=1):
        answer = json.dumps({"derivations": [example.derivation.model_dump()]}, ensure_ascii=False)
        assert f'Example {number}. Argument: "{example.argument}"\n{answer}' in LOGIC_PROMPT


# ----------------------------------------------------------------------------- in words


def record(premises: list[str], conclusion: str) -> DerivationRecord:
    result = check(premises, conclusion)
    return DerivationRecord(premises=tuple(premises), conclusion=conclusion, status=result.status,
                            error=result.error, counter_model=result.counter_model)


@pytest.mark.parametrize(
    "premises, conclusion, sentence",
    [
        (["forall x. Man(x) -> Mortal(x)", "Man(socrates)"], "Mortal(socrates)",
         "From every x that is man is mortal; and socrates is man it follows that socrates is mortal."),
        (["BansCars(paris)"], "exists x. BansCars(x)", "From paris bans cars it follows that for some x, x bans cars."),
        (["TaxesRise -> PricesRise", "~PricesRise"], "~TaxesRise",
         "From if taxes rise, then prices rise; and it is not the case that prices rise it follows that "
         "it is not the case that taxes rise."),
        (["~BansCars(rome) & CanVote(anna)", "Loves(anna, bob) | ~HasMetro(rome)"], "exists x. City(x) & BansCars(x)",
         "From rome does not ban cars and anna can vote; and anna loves bob or rome does not have metro it follows "
         "that some x that is city bans cars."),
        (["P &"], "P", "From “P &” it follows that p."),
    ],
)
def test_a_derivation_reads_in_words(premises, conclusion, sentence):
    assert derivation_sentence(record(premises, conclusion)) == sentence


def test_a_derivation_is_written_out_in_unicode():
    assert derivation_formula(record(["forall x. A(x) -> B(x)", "A(c)"], "B(c)")) == "∀x A(x) → B(x); A(c) ⊢ B(c)"


def test_each_verdict_reads_as_one_sentence():
    assert verdict_sentence(record(["P & Q"], "P")) == "This follows."
    assert verdict_sentence(record(["TaxesRise -> PricesRise", "PricesRise"], "TaxesRise")) == (
        "Your premises can all be true while the conclusion is false, e.g. when PricesRise is true and "
        "TaxesRise is false."
    )
    assert verdict_sentence(record(["P", "~P"], "Q")) == "Your premises contradict each other, so they prove anything."
    assert verdict_sentence(record(["P"], "P")) == "The conclusion only restates a premise."
    assert verdict_sentence(record(["P &"], "P")) == "This step could not be formalised."
    timed_out = DerivationRecord(premises=(), conclusion="P", status="timeout", error="z3: timeout")
    assert verdict_sentence(timed_out) == "The solver could not decide in time."
