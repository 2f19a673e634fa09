"""Pure metric functions (numpy/scipy, no I/O): classification, agreement, ranking, bootstrap."""
