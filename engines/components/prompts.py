"""Prompts of the component classifier (MAD-ACC and its vanilla and chain-of-thought baselines).

The label definitions, the tagging convention, the debaters' instruction and
the judge's criterion are the seed paper's sentences, used verbatim. The
smart-reasoning baseline gets the Judge's definitions and criterion with the
debate taken out (there are no debaters to weigh). Every
role shares one system message (task, definitions, the tagged document) and
differs only in the final user message, so a server's prefix cache reuses
the document across the manager, the debaters and the judge. The target and
every debate turn go in on one line and the document with its paragraphs
(`quoted`, `quoted_document`): the prompts' tags
and labels in them are defused, so no text can pose as a component or a turn.
"""

from __future__ import annotations

from typing import Sequence

from engines.components.types import LABELS, Turn
from engines.judging.quoting import defused, inline
from engines.llm.client import Message

LABEL_LIST = ", ".join(LABELS[:-1]) + " or " + LABELS[-1]
LABEL_DEFINITIONS = {
    "MajorClaim": "The root node of the argument structure, represents central thesis of the document.",
    "Claim": "An intermediate node that receives support, functions as the topic for evidentiary statements.",
    "Premise": "A leaf node that provides support (example, evidence, reason) to Claim or another Premise.",
}

SYSTEM = """\
You classify the argument components of an argumentative document. Each component gets one label \
y from {{MajorClaim, Claim, Premise}}, derived from the annotation scheme defined by Stab and Gurevych, \
where classes are defined as follows:
""" + "".join(f"• {label}: {LABEL_DEFINITIONS[label]}\n" for label in LABELS) + """
The full document is provided, with argument components delimited by the tags. The target component \
is marked as <TARGET>...</TARGET>, while surrounding components are masked as generic <ARG>...</ARG>.

Document:
{document}"""

CLASSIFY = """\
Classify the target component: <TARGET>{target}</TARGET>
Answer with one label: {labels}."""

CHAIN_OF_THOUGHT = """\
Classify the target component: <TARGET>{target}</TARGET>
Let's think step by step about the role of the target component in the argument structure of the \
document. Answer in at most {words} words."""

CHAIN_OF_THOUGHT_ANSWER = f"Therefore, the label of the target component ({LABEL_LIST}) is:"

DEBATER = """\
You are the {role} in a debate about the label of the target component: <TARGET>{target}</TARGET>
You defend the label {label}; the {rival_role} defends the label {rival_label}.
Defend your view. Prioritize structural and logical dependencies over isolated semantic \
assertiveness, explicitly arguing the role of target unit in the context.{history}
{task} Answer in at most {words} words."""

DEBATER_OPENING = "Present your argument for {label}."
DEBATER_REPLY = "Respond to the {rival_role}'s counterargument and defend {label}."
HISTORY = "\n\nDebate so far:\n{transcript}"

JUDGE = """\
You are the Judge of a debate about the label of the target component: <TARGET>{target}</TARGET>
The Proponent defended {proponent_label}; the Opponent defended {opponent_label}.

Debate transcript:
{transcript}

Evaluate the evidence provided by both Debaters in the transcript against the provided definitions \
of labels. Resolve the ambiguity by verifying which debater provided correct evidence and direction \
of support, rather than simply aggregating votes. Explain your verdict in at most {words} words."""

SMART = """\
You are the Judge deciding the label of the target component: <TARGET>{target}</TARGET>

Evaluate the evidence in the document against the provided definitions of labels. Resolve the ambiguity \
by verifying the evidence and direction of support. Explain your verdict in at most {words} words."""

JUDGE_VERDICT = f"Your verdict: the label of the target component ({LABEL_LIST}) is:"

ROLE_NAMES = {"proponent": "Proponent", "opponent": "Opponent", "judge": "Judge", "reasoning": "Reasoning"}
TAGS = ("TARGET", "ARG")  # what the document marks components with
# What the prompts mark their parts with: the document, the debate and its speakers' turns.
TEMPLATE_LABELS = ("Document", "Debate so far", "Debate transcript", *ROLE_NAMES.values())


def quoted(text: str) -> str:
    """A component or a turn as the prompts take it: on one line, their tags and labels in it defused."""
    return inline(text, TAGS, TEMPLATE_LABELS)


def quoted_document(text: str) -> str:
    """Part of the document as the prompts take it: its line breaks kept, their tags and labels in it defused."""
    return defused(text, TAGS, TEMPLATE_LABELS)


# The most words a turn, a reason or a chain of thought is asked for. A large token limit is
# room for a reasoning model's hidden thinking, not a request for a longer answer.
MAX_WORDS = 150


def words_for(max_tokens: int) -> int:
    """A word budget the model can meet within its token limit (about 1.4 tokens per word), at most MAX_WORDS."""
    return max(10, min(MAX_WORDS, int(max_tokens / 1.4) // 10 * 10))


def system_message(document: str) -> Message:
    return {"role": "system", "content": SYSTEM.format(document=document)}


def classify_messages(document: str, target: str) -> list[Message]:
    """The direct classification prompt: the vanilla baseline and the Manager."""
    content = CLASSIFY.format(target=quoted(target), labels=LABEL_LIST)
    return [system_message(document), {"role": "user", "content": content}]


def chain_of_thought_messages(document: str, target: str, max_tokens: int) -> list[Message]:
    return [
        system_message(document),
        {"role": "user", "content": CHAIN_OF_THOUGHT.format(target=quoted(target), words=words_for(max_tokens))},
    ]


def answer_after(messages: Sequence[Message], said: str, question: str) -> list[Message]:
    """The conversation continued with the model's own text and a closing question."""
    return [*messages, {"role": "assistant", "content": said}, {"role": "user", "content": question}]


def render_transcript(turns: Sequence[Turn]) -> str:
    return "\n\n".join(
        f"{ROLE_NAMES[turn.role]}{f' ({turn.label})' if turn.label else ''}: {quoted(turn.text)}" for turn in turns
    )


def debater_messages(
    document: str, target: str, role: str, label: str, rival_label: str, history: Sequence[Turn], max_tokens: int
) -> list[Message]:
    rival_role = ROLE_NAMES["opponent" if role == "proponent" else "proponent"]
    spoken_before = any(turn.role == role for turn in history)
    task = (DEBATER_REPLY if spoken_before else DEBATER_OPENING).format(rival_role=rival_role, label=label)
    content = DEBATER.format(
        role=ROLE_NAMES[role],
        target=quoted(target),
        label=label,
        rival_role=rival_role,
        rival_label=rival_label,
        history=HISTORY.format(transcript=render_transcript(history)) if history else "",
        task=task,
        words=words_for(max_tokens),
    )
    return [system_message(document), {"role": "user", "content": content}]


def smart_messages(document: str, target: str, max_tokens: int) -> list[Message]:
    """The Judge's definitions and criterion without a debate: the smart-reasoning baseline."""
    content = SMART.format(target=quoted(target), words=words_for(max_tokens))
    return [system_message(document), {"role": "user", "content": content}]


def judge_messages(
    document: str, target: str, proponent_label: str, opponent_label: str, transcript: Sequence[Turn], max_tokens: int
) -> list[Message]:
    content = JUDGE.format(
        target=quoted(target),
        proponent_label=proponent_label,
        opponent_label=opponent_label,
        transcript=render_transcript(transcript),
        words=words_for(max_tokens),
    )
    return [system_message(document), {"role": "user", "content": content}]

