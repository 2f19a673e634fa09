"""What retrieval returns and the one interface both backends implement."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Collection, Literal, Protocol, Sequence, runtime_checkable

from engines.errors import ArgtuiError

SearchField = Literal["text", "attacks", "supports"]
Relation = Literal["attacks", "supports"]
SEARCH_FIELDS: tuple[SearchField, ...] = ("text", "attacks", "supports")
RELATIONS: tuple[Relation, ...] = ("attacks", "supports")

# Searching a relation field, the text counts this much: many arguments share one
# claim (every IBM argument of a topic, every child of a RAD claim), and among
# them the ones whose text matches the query should come first.
RELATION_TEXT_BOOST = 0.1


@dataclass
class IndexProgress:
    """How far an index build, import or push got: `done` of `total` arguments, `skipped`
    of them already there (a resumed push)."""

    total: int
    done: int = 0
    skipped: int = 0
    invalid: int = 0  # what a progress bar reads; an index holds no invalid arguments

    @property
    def resumed(self) -> int:
        return self.skipped


ProgressCallback = Callable[[IndexProgress], None]


class RetrievalError(ArgtuiError):
    """The index is missing, busy or unreachable; the message says what to do."""


@dataclass(frozen=True)
class Argument:
    """One argument of a corpus, in the shape of the Touché RAD (ClaimRev) argument base.

    `attacks` / `supports` hold the claim the argument attacks or supports (a RAD
    argument carries both: its parent in the original wording and negated, since
    attacking P is supporting not-P). `relation` is the relation to the parent
    that the source really records (RAD `original`; the stance for IBM and Webis).
    """

    id: str
    text: str
    topic: str
    attacks: str | None = None
    supports: str | None = None
    tags: tuple[str, ...] = ()
    source: str = ""
    relation: Relation | None = None

    @property
    def target(self) -> str | None:
        """The claim of the recorded relation: what this argument really attacks or supports."""
        if self.relation is None:
            return None
        return self.attacks if self.relation == "attacks" else self.supports

    def as_dict(self) -> dict:
        data = asdict(self)
        data["tags"] = list(self.tags)
        return data


@dataclass(frozen=True)
class TopicSide:
    """One side of a topic whose arguments are labelled with their stance on it (the bundled
    corpus): the arguments on `topic` whose recorded relation to it is `relation`."""

    topic: str
    relation: Relation

    @property
    def other(self) -> "TopicSide":
        return TopicSide(self.topic, "supports" if self.relation == "attacks" else "attacks")


@dataclass(frozen=True)
class Hit:
    argument: Argument
    score: float

    def as_dict(self) -> dict:
        return {"score": self.score, **self.argument.as_dict()}


@dataclass
class IndexStatus:
    """What an index holds, for `argtui index status` and the Datasets panel."""

    backend: str
    location: str
    total: int
    sources: dict[str, int] = field(default_factory=dict)
    built_at: str | None = None
    build_seconds: float | None = None
    size_bytes: int | None = None
    version: str | None = None

    @property
    def build_note(self) -> str:
        """When and how fast the bundled corpus was indexed, e.g. `bundled corpus built 2026-05-01 12:00 UTC in 2.1 s`."""
        return f"bundled corpus built {(self.built_at or '')[:16].replace('T', ' ')} UTC in {self.build_seconds or 0:.1f} s"

    def as_dict(self) -> dict:
        return asdict(self)


@runtime_checkable
class Retriever(Protocol):
    """An argument base searchable by text and by the claims arguments attack or support."""

    name: str

    async def search(
        self,
        query: str,
        *,
        field: SearchField = "text",
        k: int = 2,
        topic: str | None = None,
        relation: Relation | None = None,
        exclude: Collection[str] = (),
    ) -> list[Hit]:
        """The k best arguments for `query` matched against `field` (BM25), best first.

        `topic` keeps arguments whose topic contains every word of it; `relation`
        keeps arguments whose recorded relation is that one; ids in `exclude` never
        come back. With `field` "attacks" (or "supports"), ties among arguments on
        the same claim are broken by how well their text matches the query.
        """
        ...

    async def get(self, ids: Sequence[str]) -> list[Argument]:
        """The arguments with these ids, in the order asked; unknown ids are left out."""
        ...

    async def count(self) -> int: ...

    async def status(self) -> IndexStatus: ...

    async def aclose(self) -> None: ...


FACT_SOURCE_BASE = "base"  # the fact source that is the debate's argument base


@dataclass(frozen=True)
class FactSource:
    """What InspireScore checks claims against: a retriever, what a check calls it, and the
    string that names it (`engines.inspire.fact_sources`)."""

    retriever: Retriever
    name: str
    source: str = FACT_SOURCE_BASE
