"""The student coach: ratings against the opponent levels, progress over debates, ballots and
drills, read from what the tasks stored of a student's debates (the top layer of engines)."""
