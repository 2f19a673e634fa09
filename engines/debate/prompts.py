"""The SINAI five-step prompts (CLEF 2025 RAD subtask 1), verbatim from the paper's appendix,
and argtui's own prompts for the quicker opponent levels and the reply checks (at the end).

In the paper's prompts only line breaks were added between list items; the words,
including the paper's spelling, are the paper's. Placeholders are filled by `str.format`,
every text from the debate, the argument base or an earlier step's answer through `quoted`:
on one line, the prompts' labels in it defused, so it cannot pose as a turn or a heading.
"""

from __future__ import annotations

from engines.judging.quoting import inline

STRATEGY_ANALYSIS = """\
You are an expert debater and you are having a dialogue with another user. Your task is to analyze with what TONE and STYLE you should answer your opponent. Keep in mind that the idea you are defending is contrary to the one he is showing. It is also very important that you define the APPROACH STRATEGY to be followed, as well as the TYPE OF ARGUMENTS you should retrieve or the PERSPECTIVE from which the argumentation should be elaborated. The diferent options of each category are:
TONE:
- Neutral: Based on facts and logic (without using emotions or making personal judgments)
- Respectful: acknowledges the other person’s point of view without disqualifying it
- Assertive/Critical: defends a position clearly and firmly. Without being aggressive
- Inquisitive: tries to ask questions to invite reflection or question a statement.
STYLE:
- Academic: follows a formal, structured style, supported by sources. The language to be used is usually technical and includes many quotations and data.
- Colloquial: It follows an informal style, with a natural and close language.
- Socratic: makes use of questions that invite reflection or lead to a contradiction.
- Logical: based on the rational structure of the argument (usually including a series of premises, conclusions, syllogisms and formal deductions).
- Rhetorical: appeals to emotions
APPROACH STRATEGY: refers to how the counterargument(s) should address the original text
- Comprehensive: addresses all points made
- Focused: focus on those arguments that are weaker.
- Principled: questions the underlying principles or assumptions of the original message.
- Free (explore other approaches not mentioned in this text).
TYPE OF ARGUMENTS:
- Logical (based on reason and facts)
- Ethical (values, rights)
- Emotional (empathy, human impact)
- Analogical (establishing examples and similarities)
PERSPECTIVE:
- Economic
- Ethical/Moral
- Scientific
- Practical/pragmatic
- Historical
- Cultural
The format of your response have to consist in an unique JSON with exactly these keys:
- tone: a string with the selected TONE (Neutral, Respectful,Assertive/Critical, or Inquisitive).
- justification_tone: an explanation about why you have selected that tone.
- style: a string with the selected STYLE (Academic, Colloquial, Socratic, Logical or Rhetorical).
- justification_style: an explanation about why you have selected that style
- approach_strategy: a string with the selected APPROACH STRATEGY (Comprehensive, Focused, Principled or Free).
- justification_approach: an explanation about why you have selected that approach strategy.
- type_of_arguments: a string with the selected TYPE OF ARGUMENTS (Logical, Ethical, Emotional, or Analogical)
- justification_type: an explanation about why you have selected that type of arguments.
- perspective: a string with the selected PERSPECTIVE (Economic, Ethical/Moral, Scientific, Practicalpragmatic, Historical, or Cultural)
- justification_perspective: an explanation about why you have selected that perspective.
Specific information about the established debate is included below. Remember that you have to analyze the way you should answer and oppose to your opponent’s last message:
{debate_dialogue}"""

QUERY_GENERATION = """\
You are an expert debater and you are having a dialogue with another user. Your task is to analyze how to find arguments or contra-arguments to response your last opponent message. Keep in mind that the idea you are defending is contrary to the one he is showing.
Please response with only a JSON Object that contain as keys the word SEARCH followed by a number with the step to search (SEARCH_1,SEARCH_2, . . . ). Each key has a value a dictionary with the following keys:
- opponent_idea: a string with the idea showed by your opponent that you want to use to search the arguments, please try to be specific and put the opponent idea complete. You must include the specific subject in your sentence removing inespecific subjects like its, his or her.
- field_to_look: a string with two possible values (SUPPORT or ATTACK). For example you can identify the opponent idea and look for argument that support his idea and later look for arguments that attack the support arguments, or you want to look for arguments that attack the idea of your opponent, or instead you prefer to find arguments that attacks your opponent idea and retrieve arguments that support your main idea.
- justification: an string with a justification of why you have selected that decision.
It is important that at maximum you can make 3 diferent search. Specific information about the established debate is included below.
{debate_dialogue}
Take into account that previously you decided that the arguments or counterarguments that you are looking for should address your opponent message with a {approach_strategy} strategy that consist in {approach_description}. The justification of your previous decision is: {justification_approach}"""

APPROACH_DESCRIPTIONS = {
    "Comprehensive": "addresses all points made",
    "Focused": "focus on those arguments that are weaker.",
    "Principled": "questions the underlying principles or assumptions of the original message.",
    "Free": "explore other approaches not mentioned in this text",
}

QUERY_SELECTION = """\
You are an expert debater and you are having a dialogue with another user. Your task is to select the 3 best arguments in order to generate a reply to your opponent’s last message in a future step. Specific information about the established debate is included below.
{debate_dialogue}
The information you are looking for is listed below:
{query}
We search arguments by 3 diferent strategies:
- ATTACK STRATEGY is for arguments that attack the opponent_idea.
- SUPPORT STRATEGY is looking for arguments that attack some arguments that support the opponent_idea.
- TEXT STRATEGY is looking by the similarity of your opponent_idea and the text of the retrieval argument
The information retrieved in each strategy is shown next:
{retrieved_arguments}
To select the best arguments take into consideration that you want to select {type_of_arguments} arguments. The justification to select these types of arguments appear next: {justification_type}"""

FINAL_SELECTION = """\
You are an expert debater and you are having a dialogue with another user. Your task is to select at maximum of 3 arguments to answer the last opponent message. Keep in mind that the idea you are defending is contrary to the one he is showing.
Specific information about the established debate is included below.
{debate_dialogue}
Previously some arguments are retrieved in base a diferent aspects. The following information contains the aspect to search arguments and selected arguments for each criteria.
{searches}
Now respond in a JSON format with the keys:
- aspect_argument_1: a string with the exact text of the aspect of the first selected argument.
- retrieved_argument_1: a string with the exact text of the first selected argument.
- justification_argument_1: a string with the justification of the selection of the first selected argument.
- aspect_argument_2: a string with the exact text of the aspect of the second selected argument.
- retrieved_argument_2: a string with the exact text of the second selected argument.
- justification_argument_2: a string with the justification of the selection of the second selected argument.
- aspect_argument_3: a string with the exact text of the aspect of the third selected argument.
- retrieved_argument_3: a string with the exact text of the third selected argument.
- justification_argument_3: a string with the justification of the selection of the third selected argument."""

RESPONSE_GENERATION = """\
You are an expert debater and you are having a dialogue with another user. Your task is to generate a response to your last opponent message. Keep in mind that the idea you are defending is contrary to the one he is showing.
Specific information about the established debate is included below.
{debate_dialogue}
Your answer should take into account the following parameters: {{ tone: {tone}, justification_tone: {justification_tone}, style: {style}, justification_style: {justification_style}, perspective: {perspective}, justification_perspective: {justification_perspective}, }}
Retrieved arguments to elaborate the answer: {selected_arguments}
Please response with JSON format that contain as keys the words:
- response: a string with the response to your last opponent message. This answer has to be of a maximum of 60 words.
- justification: a string with the explanation about how you generate your answer.
- arguments: a list of the string with the exact retrieved arguments that you used to elaborate the final answer and that have relation with your response.
Moreover take in account that your answer must meet the following criteria:
- Quantity: be informative and provide enough information for the opponent to understand your position.. Does the response contain at least one (attack or defense) argument, and at most one of each type of defense and attack?
- Quality: be truthful. Can the response be deduced from the retrieved arguments?
- Relation: be relevant. Is the response coherent with the conversation and does it express a contrary stance to the user?
- Manner: be clear. Is the response clear and precise?
- Length: be of at most 60 words"""


# ---------------------------------------------------------------- argtui's own (not the paper's)

# Level 1: one call that adapts the best counter-argument to the dialogue.
QUICK_REPLY = """\
{debate_dialogue}
Your argument: "{argument}"
Rewrite your argument as a reply to your opponent's last message, in at most 60 words. Reply:"""

# Added to a reply prompt when the previous answer was rejected.
RETRY_NOTE = "Your previous answer was rejected because {reason}. Write a new answer that avoids this."

# The stance check of a reply: it names the student's side, so "yes" means the reply argues it.
STANCE_CHECK = """\
Debate topic: {claim}
Reply: {reply}
Does the reply argue {stance} the topic? Answer yes or no."""


# What the prompts mark their parts with: the dialogue's lines and speakers, step 1's categories,
# step 3's strategy headings, step 4's searches, and the lines of argtui's own prompts.
TEMPLATE_LABELS = (
    "Debate topic", "Opponent", "You", "Your argument", "Reply",
    "TONE", "STYLE", "APPROACH STRATEGY", "TYPE OF ARGUMENTS", "PERSPECTIVE",
    "ATTACK STRATEGY", "SUPPORT STRATEGY", "TEXT STRATEGY", "SEARCH_1", "SEARCH_2", "SEARCH_3",
)

# What a model writes before a reply beside the prompts' labels: the reply's own name.
REPLY_LABELS = (*TEMPLATE_LABELS, "Response", "My response", "Answer", "My answer")


def quoted(text: str) -> str:
    """A text as the prompts take it: on one line, their labels in it defused."""
    return inline(text, labels=TEMPLATE_LABELS)
