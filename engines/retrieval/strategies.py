"""The SINAI retrieval strategies (CLEF 2025 RAD, Step 2.5): one call per query idea.

For an idea the bot wants to ATTACK or SUPPORT:

* **text**: `k` arguments whose text is most similar to the idea;
* **attack**: `k` arguments found through the `attacks` field (they attack the idea);
* **support**: `k` arguments found through the `supports` field (they support it);
* **one-hop chains**, on the side that works against the goal:
  - goal ATTACK: for each support argument, one argument that attacks it — found
    through the `attacks` field with the support argument's text. The paper's
    "one argument that supports the attack associated with each support argument"
    is read as an argument arguing against that support argument, which is also
    how its selection prompt describes the strategy ("arguments that attack some
    arguments that support the opponent_idea");
  - goal SUPPORT: for each attack argument, one argument that supports that
    attack — found through the `supports` field with the attack argument's text
    ("one supporting argument for its corresponding attack").

Step 3 chooses from six of them, as the paper counts: text, the goal's own relation
(attack for ATTACK, support for SUPPORT) and the chains. The hits the chains start from
(support for ATTACK, attack for SUPPORT) are the way to the chains, not answers: their
nodes are marked `context`, kept in the graph (and the evidence) to show how each chain
was found, and left out of what step 3 is offered.

No argument appears twice. The relational strategies pick first (in the goal's
order), the text strategy next and the chains last, so an argument matched
both by a relation field and by similarity keeps the edge that says how it
relates to the idea. The first hop is one round of concurrent searches
(each asks for enough extra hits to fill its `k` after the earlier strategies
took theirs), the chains a second round.

On a topic whose arguments carry their stance on it (`engines.retrieval.stance`), the bot's
`side` of the topic is known: every argument offered to step 3 (text, the goal's own relation,
the chains) is on that side, and the hits the chains start from on the other side.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from typing import Awaitable, Collection, Literal

from engines.retrieval.types import Argument, Hit, Relation, Retriever, SearchField, TopicSide

Goal = Literal["ATTACK", "SUPPORT"]
Strategy = Literal["text", "attack", "support", "chain"]
GOALS: tuple[Goal, ...] = ("ATTACK", "SUPPORT")
IDEA = "idea"  # the edge target that stands for the query idea itself
# How many more hits than asked a search on one side of a topic looks at: the topic filter keeps
# every topic holding all its words ("ban cosmetic surgery" also holds "… for minors"), and
# only the topic itself counts.
SIDE_OVERFETCH = 4

_FIELD: dict[Strategy, SearchField] = {"text": "text", "attack": "attacks", "support": "supports"}
_RELATION: dict[Strategy, Relation] = {"attack": "attacks", "support": "supports"}


@dataclass(frozen=True)
class GraphNode:
    argument: Argument
    strategy: Strategy
    score: float
    context: bool = False  # a hit a chain starts from: shown, not offered for selection


@dataclass(frozen=True)
class GraphEdge:
    """`source` attacks or supports `target` (an argument id, or IDEA)."""

    source: str
    target: str
    relation: Relation


@dataclass
class ArgumentGraph:
    idea: str
    goal: Goal
    nodes: list[GraphNode]
    edges: list[GraphEdge]

    def arguments(self, strategy: Strategy | None = None) -> list[Argument]:
        return [node.argument for node in self.nodes if strategy is None or node.strategy == strategy]

    def candidates(self) -> list[GraphNode]:
        """The nodes step 3 chooses from: every node but the context ones."""
        return [node for node in self.nodes if not node.context]

    def node(self, argument_id: str) -> GraphNode | None:
        return next((node for node in self.nodes if node.argument.id == argument_id), None)

    def edges_from(self, argument_id: str) -> list[GraphEdge]:
        return [edge for edge in self.edges if edge.source == argument_id]

    def as_dict(self) -> dict:
        return {
            "idea": self.idea,
            "goal": self.goal,
            "nodes": [
                {"strategy": node.strategy, "score": node.score, "context": node.context, **node.argument.as_dict()}
                for node in self.nodes
            ],
            "edges": [asdict(edge) for edge in self.edges],
        }


async def search_side(
    retriever: Retriever, query: str, side: TopicSide, k: int, *, field: SearchField = "text",
    exclude: Collection[str] = (),
) -> list[Hit]:
    """The k best arguments for `query` on one side of a topic, best first."""
    hits = await retriever.search(
        query, field=field, k=k * SIDE_OVERFETCH, topic=side.topic, relation=side.relation, exclude=exclude
    )
    return [hit for hit in hits if hit.argument.topic == side.topic][:k]


def _search(
    retriever: Retriever, query: str, strategy: Strategy | None, k: int, topic: str | None, side: TopicSide | None,
    exclude: Collection[str] = (), field: SearchField | None = None,
) -> Awaitable[list[Hit]]:
    """One strategy's search: on `side` of its topic when known (a relation strategy then searches
    the field that holds the topic for that side's arguments), else anywhere in `topic`."""
    if side is None:
        return retriever.search(query, field=field or _FIELD[strategy], k=k, topic=topic, exclude=exclude)
    return search_side(retriever, query, side, k, field="text" if strategy == "text" else side.relation,
                       exclude=exclude)


def _first_hop_order(goal: Goal) -> tuple[Strategy, ...]:
    """Which strategy picks first, then next: the relational ones in the goal's order, then text."""
    return ("attack", "support", "text") if goal == "ATTACK" else ("support", "attack", "text")


def _pick(hits: list[Hit], taken: set[str], k: int) -> list[Hit]:
    picked = [hit for hit in hits if hit.argument.id not in taken][:k]
    taken.update(hit.argument.id for hit in picked)
    return picked


async def retrieve_for_idea(
    retriever: Retriever, idea: str, goal: Goal, k: int = 2, *, topic: str | None = None,
    side: TopicSide | None = None,
) -> ArgumentGraph:
    """The small argument graph for one query idea: nodes tagged by strategy, relation edges.
    `side`: the bot's side of a labelled topic, which every argument it may choose is on."""
    if goal not in GOALS:
        raise ValueError(f"goal must be one of {GOALS}, got {goal!r}")
    order = _first_hop_order(goal)
    # goal ATTACK: attack each support argument; goal SUPPORT: support each attack argument
    base: Strategy = "support" if goal == "ATTACK" else "attack"
    chain_relation: Relation = "attacks" if goal == "ATTACK" else "supports"
    first_hop = await asyncio.gather(*(
        _search(retriever, idea, s, k * (rank + 1), topic, side.other if side and s == base else side)
        for rank, s in enumerate(order)
    ))
    taken: set[str] = set()
    picked = {strategy: _pick(hits, taken, k) for strategy, hits in zip(order, first_hop)}

    bases = [hit.argument for hit in picked[base]]
    chain_hits = await asyncio.gather(*(
        _search(retriever, argument.text, None, len(bases), topic, side, exclude=taken, field=chain_relation)
        for argument in bases
    ))

    nodes: list[GraphNode] = []
    edges: list[GraphEdge] = []
    for strategy in ("text", *_first_hop_order(goal)[:2]):
        for hit in picked[strategy]:
            nodes.append(GraphNode(hit.argument, strategy, hit.score, context=strategy == base))
            if strategy in _RELATION:
                edges.append(GraphEdge(hit.argument.id, IDEA, _RELATION[strategy]))
    for argument, hits in zip(bases, chain_hits):
        for hit in _pick(hits, taken, 1):
            nodes.append(GraphNode(hit.argument, "chain", hit.score))
            edges.append(GraphEdge(hit.argument.id, argument.id, chain_relation))
    return ArgumentGraph(idea=idea, goal=goal, nodes=nodes, edges=edges)
