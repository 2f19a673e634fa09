"""InspireScore: subjective scores, logical validity and support by the argument base of debate turns."""
