"""`invoke verify --release R`: every pin of R checked against the outside world before a build. One
checker a module (pip pins and their wheels, the closure of the pin set, git refs, apt archives), the
rows they make and how those are shown (report.py), and the run that joins them (run.py)."""
