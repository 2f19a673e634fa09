"""InspireScore: subjective scores, logical validity and factual truthfulness of debate turns."""
