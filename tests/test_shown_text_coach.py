"""Nothing shown that the model did not mean, beyond the ballot: the Coach's claims (numbering and
prompt labels taken off, the same claim once, a claim not meant asked again, then "no usable
answer"), the claim attribution's negation, what the argument base is said to have, Grice
rationales (a disclaimer asked again, then "no usable answer" on screen and in the teacher's
Markdown), and drills (a conclusion one premise gives alone is circular)."""

from __future__ import annotations

from engines.student.drills import FALLACIES, judge_derivation


# ---------------------------------------------------------------- drills


def test_a_conclusion_hidden_inside_one_premise_is_circular_in_a_drill():
    hidden = judge_derivation(FALLACIES[1], "~CleanAir & BanCars |- ~CleanAir")
    assert hidden.score == 0.0
    assert "restates a premise" in hidden.feedback and "Premise 1 (~CleanAir & BanCars)" in hidden.feedback
    second = judge_derivation(FALLACIES[3], "TaxesRise ; PricesRise & TaxesRise |- PricesRise")
    assert second.score == 0.0 and "Premise 2" in second.feedback
    together = judge_derivation(FALLACIES[1], "~BanCars -> ~CleanAir ; ~BanCars |- ~CleanAir")
    assert (together.score, together.feedback) == (1.0, "This follows.")
