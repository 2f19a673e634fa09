"""Critique rating: positions, critiques, raters, append-only ratings, source reveals.

`tables` holds the tables and the views that leave the store, `staging` the all-or-nothing
import, `ratings` the repository (first ratings, revisions, reading), `migrations` what
databases of schema 1 need. Importing the package registers all of them.
"""

from store.critiques.migrations import JUDGMENT_TASK, carried_judge, copy_v1
from store.critiques.ratings import CritiqueRepository
from store.critiques.staging import (
    CritiqueImport,
    ImportCounts,
    NewCritique,
    NewPosition,
    NewRating,
    StagedCritique,
    StagedPosition,
    StagedRating,
)
from store.critiques.tables import (
    DIMENSIONS,
    HUMAN,
    JUDGE,
    Critique,
    CritiqueError,
    CritiquePosition,
    CritiqueRating,
    CritiqueView,
    PositionView,
    Rater,
    RaterView,
    RatingVersion,
    RatingView,
    SourceReveal,
)

__all__ = [
    "DIMENSIONS", "HUMAN", "JUDGE", "JUDGMENT_TASK", "Critique", "CritiqueError",
    "CritiqueImport", "CritiquePosition", "CritiqueRating", "CritiqueRepository", "CritiqueView", "ImportCounts",
    "NewCritique", "NewPosition", "NewRating", "PositionView", "Rater", "RaterView", "RatingVersion", "RatingView",
    "SourceReveal", "StagedCritique", "StagedPosition", "StagedRating", "carried_judge", "copy_v1",
]
