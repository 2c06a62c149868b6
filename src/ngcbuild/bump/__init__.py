"""`ngcbuild bump --release R`: the next release proposed from the indexes, or a team's lock on its
base's newest pins.

- apply.py: the command. The names are checked first (--as, and the files a proposal would be written
  to: proposal_files.py), then the proposal is made, loaded, rendered in memory and verified in a
  scratch copy of the project, and only then are both files written (or neither), with
  build/NAME/bump.md (report.py). `--check` writes nothing: exit 0 current, 1 newer, 3 could not check.
- reads.py: what one run reads: the release's indexes with the user's index setting, those reachable,
  one deadline, and the resolver's whole set over them (resolver/whole_set.py: uv resolves, verify's
  reader reads each distribution's metadata; never a whole wheel).
- propose.py: a release made from public wheels, by its policy (`bump:`): the newest leader (torch) it
  admits, with everything the whole set then resolves to, and why each pin below the newest is held.
- components.py: what the proposal changes in the manifest's components (torch's reported version read
  from its wheel's version.py by range requests: wheel_file.py); texts.py: the two files it writes.
- nvidia.py: for NVIDIA's releases, a draft whose NVIDIA-chosen values are UNKNOWN and whose pip-level
  pins are resolved against stand-ins of what the image builds.
- team.py: for a derived release, its requirements resolved again on its base's pins as they are now
  (or on the base's proposal): what moved against the lock, and what now conflicts, with the chains.
"""
