"""The demo critique set, built from the bundled IBM-ArgQ-Rank-30kArgs (CC BY-SA 3.0).

DEMO DATA, not the seed's expert dataset (which is not public). Each position
is an IBM topic with its best-rated supporting argument; its critiques are
opposing arguments on the topic, picked across the range of crowd quality and
shown in file order (not by quality). The last position has a single critique,
so the ranking loss's skipping of such positions shows up in the demo.

Two demo raters carry ratings derived from IBM's crowd quality scores, one
from the WA score and one from the MACE-P score. The crowd answered one
question (is this a good argument on the topic), so only `overall`,
`strength`, `correctness` and `clarity` take that score; the others follow a
fixed rule: centrality 1 (an opposing argument attacks the topic claim itself),
dead weight 0 and single issue 1 (the arguments are one or two sentences).
They are stand-ins for trying the tables, not expert ratings.

Rebuild the shipped file (deterministic bytes): `python -m engines.critiques.demo`.
"""

from __future__ import annotations

import gzip
import io
import sys
from pathlib import Path
from typing import Any

from engines.critiques.files import write_jsonl
from engines.datasets import BUNDLED
from engines.datasets.ibm import IbmArgument, load_ibm

DEMO_PATH = BUNDLED / "critiques-demo.jsonl.gz"
POSITIONS = 11
QUANTILES = (0.0, 0.25, 0.5, 0.75, 1.0)
DEMO_RATERS = {"demo-crowd-wa": "quality_wa", "demo-crowd-mace": "quality_mace_p"}
DEMO_NOTE = "demo rating derived from the IBM-ArgQ crowd quality score ({score}); not an expert rating"


def demo_rating(score: float) -> dict[str, float]:
    score = round(score, 3)
    return {
        "centrality": 1.0, "strength": score, "correctness": score, "clarity": score,
        "dead_weight": 0.0, "single_issue": 1.0, "overall": score,
    }


def _spread_picks(arguments: list[IbmArgument], quantiles: tuple[float, ...]) -> list[IbmArgument]:
    """The arguments at these quantiles of crowd quality, returned in file order."""
    ranked = sorted(arguments, key=lambda a: (a.quality_wa, a.row))
    indices = {round(q * (len(ranked) - 1)) for q in quantiles}
    return sorted((ranked[i] for i in indices), key=lambda a: a.row)


def build_demo_records(arguments: list[IbmArgument]) -> list[dict[str, Any]]:
    topics = sorted({a.topic for a in arguments})
    step = len(topics) // POSITIONS
    records = []
    for number, topic in enumerate(topics[::step][:POSITIONS], start=1):
        on_topic = [a for a in arguments if a.topic == topic]
        supporting = max((a for a in on_topic if a.stance == 1), key=lambda a: (a.quality_wa, -a.row))
        opposing = [a for a in on_topic if a.stance == -1]
        quantiles = (0.5,) if number == POSITIONS else QUANTILES
        position_id = f"demo-p{number:02d}"
        for k, argument in enumerate(_spread_picks(opposing, quantiles), start=1):
            records.append(
                {
                    "position_id": position_id,
                    "position": f"{topic}.\n\n{supporting.text}",
                    "critique_id": f"{position_id}-c{k}",
                    "critique": argument.text,
                    "source": f"demo set: IBM-ArgQ-Rank-30kArgs row {argument.row}, opposing argument (CC BY-SA 3.0)",
                    "topic": topic,
                    "ratings": [
                        {
                            "rater": rater,
                            **demo_rating(getattr(argument, score)),
                            "note": DEMO_NOTE.format(score="WA" if score == "quality_wa" else "MACE-P"),
                        }
                        for rater, score in DEMO_RATERS.items()
                    ],
                }
            )
    return records


def demo_bytes(arguments: list[IbmArgument] | None = None) -> bytes:
    """The gzipped JSONL, byte for byte what ships (gzip header without time or name)."""
    text = io.StringIO()
    write_jsonl(build_demo_records(arguments or load_ibm()), text)
    return gzip.compress(text.getvalue().encode("utf-8"), compresslevel=9, mtime=0)


def write_demo(path: Path = DEMO_PATH) -> Path:
    path.write_bytes(demo_bytes())
    return path


if __name__ == "__main__":
    print(write_demo(Path(sys.argv[1]) if len(sys.argv) > 1 else DEMO_PATH))
