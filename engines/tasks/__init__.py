"""One module per judge task; each defines `TASK` (see engines/judging/task.py)."""
