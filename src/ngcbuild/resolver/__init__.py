"""The one resolver: uv, run the one way (uv.py) in a clean room (clean_room.py) within one deadline
per run (deadline.py), against one list of indexes per release with the user's index setting
(core/indexes.py, the rule every step that reads an index follows). `resolve`, `fit` and `bump` ask
it: a team's requirements on a base (resolution.py, its conflicts read by conflicts.py, what the base
holds standing in as stand_ins.py's wheels), and a
release's whole set at its newest (whole_set.py, each distribution's metadata read by verify's one
reader), and the smoke suite's pytest for an image's Python as pure wheels (pure_wheels.py). verify
reads the same indexes and judges the same pins with its own reader of metadata."""
