"""Splitting free text (a debate message, a paragraph) into candidate argument components.

Rule-based, at sentence and clause level, shaped after how argument
components are annotated in persuasive essays: a component is a sentence or
a clause of one, without the discourse marker that introduces it ("For
example,", "I believe that") and without its closing punctuation. Every span
maps back onto the text exactly: `text[span.start:span.end] == span.text`.
"""

from __future__ import annotations

import re

from engines.components.types import Span
from engines.sentences import pieces, sentence_spans

# A clause boundary: the split falls before the connective, which is then trimmed.
CLAUSE_BOUNDARY = re.compile(
    r";\s+|:\s+(?=[A-Z])"
    r"|,\s+(?=(?:because|since|as|so|but|while|whereas|although|though|even though|which means"
    r"|and therefore|and thus|and so|and hence|thus|therefore|hence)\b)"
    r"|\s+(?=(?:because|although|whereas|even though)\b)",
    re.IGNORECASE,
)
DISCOURSE_MARKER = re.compile(
    r"(?:(?:for (?:example|instance)|in (?:addition|conclusion|contrast|fact|other words|my opinion|my view"
    r"|this case|the first place|summary|short|brief|particular|general)|on the other hand|on the contrary"
    r"|first(?:ly)?|second(?:ly)?|third(?:ly)?|finally|lastly|last but not least|first of all"
    r"|first and foremost|to begin with|to sum up|to conclude|to summarize|all in all|as a result"
    r"|as a matter of fact|what is more|in the end|of course|after all|above all"
    r"|\w+ly|(?:from|in) my (?:perspective|point of view)|as far as i am concerned|personally|besides"
    r"|however|moreover|furthermore|nevertheless|nonetheless|consequently|therefore|thus|hence|indeed"
    r"|still|instead|meanwhile|admittedly|similarly|likewise|overall|accordingly|otherwise|so|also),\s*"
    r"|(?:i|we)(?: \w+)?(?: strongly| firmly| truly| really)? (?:believe|think|agree|feel|argue|contend"
    r"|maintain|conclude|would say|would argue|would conclude)(?: that)?\s+"
    r"|it is (?:\w+ )?(?:undeniable|clear|obvious|true|evident|certain|apparent|likely|important|known)"
    r" that\s+"
    r"|(?:and|but|so|or|yet|because|since|while|whereas|although|though|even though|which means(?: that)?"
    r"|thus|therefore|hence|then|also|that is why|this is because|this means that)\b\s*)+",
    re.IGNORECASE,
)
TRAILING = re.compile(r"[\s.!?,;:\"'”’)\]]+$")
LEADING = re.compile(r"^[\s\"'“‘(\[-]+")
MIN_WORDS = 3


def segment(text: str) -> list[Span]:
    """Candidate components of `text`, in order, non-overlapping, each with its exact character span."""
    spans = []
    for start, end in sentence_spans(text):
        for clause_start, clause_end in pieces(text, CLAUSE_BOUNDARY, start, end):
            span = _trimmed(text, clause_start, clause_end)
            if span is not None:
                spans.append(span)
    return spans


def _trimmed(text: str, start: int, end: int) -> Span | None:
    piece = text[start:end]
    lead = LEADING.match(piece)
    offset = lead.end() if lead else 0
    marker = DISCOURSE_MARKER.match(piece, offset)
    if marker:
        offset = marker.end()
    tail = TRAILING.search(piece, offset)
    stop = tail.start() if tail else len(piece)
    if len(piece[offset:stop].split()) < MIN_WORDS:
        return None
    return Span(start + offset, start + stop, piece[offset:stop])
