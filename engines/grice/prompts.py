"""Prompts of the Grice judges.

The ZSL prompt and the Analyzer stage-2 prompt are the templates of the
paper's appendix (seed 001, "Prompt ZSL (Subtask 2)" and "Analysis Strategy
Prompt for Step 2"), word for word, typos included, with line breaks around
the multi-line `{debate_dialogue}`. The appendix's placeholder for the "no"
reasons is garbled (`{answer_1[]}`); here it is `{answer_model_step1[no]}`,
the twin of `{answer_model_step1[yes]}`. The paper describes but does not
print the few-shot and the Analyzer stage-1 prompts: few-shot examples are earlier chat turns that each use the ZSL
prompt and are answered yes or no; the stage-1 prompt is written here from
the paper's description.

`{debate_dialogue}` is the conversation, the marked response and the
retrieved arguments, each in its own delimited block, every message and
argument on one line (`quoted`), so that text inside them cannot pose as a
speaker's turn or close a block; the stage-1 reasons go into the Analyzer
prompt the same way.

Two layouts send these words. `seed` is the templates as printed. `shared`
moves `{debate_dialogue}` to the top of the message and keeps every sentence of
the template after it, in the template's order: the four metric prompts of a
turn (and their rationale requests) then begin with the same bytes, which a
server's prefix cache computes once instead of four times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engines.grice.pool import GriceExample
from engines.grice.questions import QUESTIONS
from engines.grice.types import GriceContext
from engines.judging.quoting import inline

Message = dict[str, str]

PROMPT_HEAD = (
    "You are an expert in evaluating and analyzing the quality of the answers and arguments used during "
    "various rounds of debate. Your task is to evaluate the last answer of the system based on the "
    "{evaluation_metric} metric: {evaluation_question_metric}\n"
)
ZSL_TEMPLATE = PROMPT_HEAD + (
    "Bellow you have the conversation and the arguments retrieved:\n{debate_dialogue}\n"
    "Please respond only with yes or no to the question about {evaluation_metric}( {evaluation_metric_question} )"
)
ANALYZER_TEMPLATE = PROMPT_HEAD + (
    "Now I will give you some reason to answer with yes or no.\n"
    "- Respond with yes if {answer_model_step1[yes]}.\n"
    "- Respond with no if {answer_model_step1[no]}.\n"
    "Now is your turn. Below you have the information of the debate:\n{debate_dialogue}\n"
    "Please respond only with ( {evaluation_question_metric} ) yes or no"
)
ANALYZER_STAGE1_TEMPLATE = (
    "You are an expert in evaluating and analyzing the quality of the answers and arguments used during "
    "various rounds of debate. Your task is to explain how the last answer of the system is evaluated "
    "based on the {evaluation_metric} metric: {evaluation_question_metric}\n"
    "Below are {k} example(s) where the answer to this question is yes and {k} example(s) where it is no.\n"
    "{examples}\n"
    "Explain in a general form, valid beyond these examples, why someone answers yes and why someone "
    "answers no. Respond with a JSON object with two keys: \"yes\", a clause that completes the sentence "
    "\"Respond with yes if ...\", and \"no\", a clause that completes the sentence \"Respond with no if ...\"."
)
RATIONALE_REQUEST = "Explain your answer in one or two sentences."

SEED_LAYOUT, SHARED_LAYOUT = "seed", "shared"
LAYOUTS = (SEED_LAYOUT, SHARED_LAYOUT)
DEFAULT_LAYOUT = SEED_LAYOUT  # the templates as printed, for `argtui eval grice` and live debates alike
DIALOGUE_FIELD = "{debate_dialogue}\n"

# Budgets keep prompts inside a small model's context (the embedded server has 4096 tokens a slot).
DIALOGUE_MAX_CHARS = 8000  # the turn under judgment: oldest messages are left out first
ARGUMENT_MAX_CHARS = 1000
EXAMPLE_HISTORY_MESSAGES = 2  # an example shows at most this many messages before the user's last one
EXAMPLE_MAX_ARGUMENTS = 3
EXAMPLE_ARGUMENT_MAX_CHARS = 300

BLOCK_TAGS = ("conversation", "marked_response", "retrieved_arguments", "example")
_SPEAKER = {"user": "User", "assistant": "System"}


def quoted(text: str) -> str:
    """A message, argument or reason as the templates take it: on one line, the blocks' tags
    and the speakers' labels in it defused."""
    return inline(text, BLOCK_TAGS, tuple(_SPEAKER.values()))


@dataclass(frozen=True)
class DialogueBudget:
    max_chars: int = DIALOGUE_MAX_CHARS
    history_messages: int | None = None  # None: as many as fit in max_chars
    max_arguments: int | None = None
    argument_chars: int = ARGUMENT_MAX_CHARS


FULL = DialogueBudget()
COMPACT = DialogueBudget(
    history_messages=EXAMPLE_HISTORY_MESSAGES,
    max_arguments=EXAMPLE_MAX_ARGUMENTS,
    argument_chars=EXAMPLE_ARGUMENT_MAX_CHARS,
)


def _clipped(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def render_dialogue(context: GriceContext, budget: DialogueBudget = FULL) -> str:
    """The `{debate_dialogue}` block: conversation, marked response, retrieved arguments."""
    lines = [f"{_SPEAKER.get(role, role.title())}: {quoted(text)}" for role, text in context.dialogue]
    keep = len(lines) if budget.history_messages is None else min(len(lines), budget.history_messages + 1)
    while keep > 1 and sum(len(line) + 1 for line in lines[-keep:]) > budget.max_chars:
        keep -= 1
    omitted = len(lines) - keep
    shown = ([f"({omitted} earlier messages left out)"] if omitted else []) + lines[len(lines) - keep :]
    arguments = list(context.arguments)
    if budget.max_arguments is not None:
        arguments = arguments[: budget.max_arguments]
    argument_lines = [
        f"[{number}] {_clipped(quoted(text), budget.argument_chars)}"
        for number, text in enumerate(arguments, start=1)
    ] or ["(none)"]
    return "\n".join(
        ["<conversation>", *shown, "</conversation>",
         "<marked_response>", f"System: {quoted(context.reply)}", "</marked_response>",
         "<retrieved_arguments>", *argument_lines, "</retrieved_arguments>"]
    )


def laid_out(template: str, layout: str) -> str:
    """A judging template in a layout: `seed` as printed; `shared` with the debate block
    first and the template's sentences after it, each as printed and in the same order."""
    if layout == SEED_LAYOUT:
        return template
    if layout != SHARED_LAYOUT:
        raise ValueError(f"unknown Grice prompt layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    before, after = template.split(DIALOGUE_FIELD)
    return DIALOGUE_FIELD + before + after


def _fields(metric: str) -> dict[str, str]:
    question = QUESTIONS[metric]
    return {
        "evaluation_metric": question.dimension,
        "evaluation_question_metric": question.question,
        "evaluation_metric_question": question.question,
    }


def zsl_prompt(
    metric: str, context: GriceContext, budget: DialogueBudget = FULL, layout: str = DEFAULT_LAYOUT
) -> str:
    return laid_out(ZSL_TEMPLATE, layout).format(**_fields(metric), debate_dialogue=render_dialogue(context, budget))


def zsl_messages(metric: str, context: GriceContext, layout: str = DEFAULT_LAYOUT) -> list[Message]:
    return [{"role": "user", "content": zsl_prompt(metric, context, layout=layout)}]


def fsl_messages(
    metric: str, context: GriceContext, examples: list[GriceExample], layout: str = DEFAULT_LAYOUT
) -> list[Message]:
    """Each example is an earlier exchange: the ZSL prompt on the example, answered with its label.

    The examples come first, so every turn judged on a metric shares that prefix
    (the server's prefix cache reuses it).
    """
    messages: list[Message] = []
    for example in examples:
        messages.append({"role": "user", "content": zsl_prompt(metric, example.context, COMPACT, layout)})
        messages.append({"role": "assistant", "content": "Yes" if example.labels[metric] else "No"})
    return messages + zsl_messages(metric, context, layout)


def _reason_clause(text: str) -> str:
    """A stage-1 reason as it fits after "Respond with yes if": no leading "if", no final stop."""
    clause = quoted(text).rstrip(" .")
    return re.sub(r"^(respond with (yes|no) )?if\s+", "", clause, flags=re.IGNORECASE)


def analyzer_messages(
    metric: str, context: GriceContext, reasons_yes: str, reasons_no: str, layout: str = DEFAULT_LAYOUT
) -> list[Message]:
    prompt = laid_out(ANALYZER_TEMPLATE, layout).format(
        **_fields(metric),
        answer_model_step1={"yes": _reason_clause(reasons_yes), "no": _reason_clause(reasons_no)},
        debate_dialogue=render_dialogue(context),
    )
    return [{"role": "user", "content": prompt}]


def analyzer_stage1_messages(
    metric: str, positives: list[GriceExample], negatives: list[GriceExample]
) -> list[Message]:
    blocks = [
        f'<example answer="{answer}">\n{render_dialogue(example.context, COMPACT)}\n</example>'
        for answer, group in (("yes", positives), ("no", negatives))
        for example in group
    ]
    prompt = ANALYZER_STAGE1_TEMPLATE.format(**_fields(metric), k=len(positives), examples="\n".join(blocks))
    return [{"role": "user", "content": prompt}]


def rationale_messages(judged: list[Message], answer: str) -> list[Message]:
    """The judged prompt, the judge's answer, and a request to explain it (shares the prompt's prefix)."""
    return [*judged, {"role": "assistant", "content": answer}, {"role": "user", "content": RATIONALE_REQUEST}]
