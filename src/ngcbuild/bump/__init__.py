"""`ngcbuild bump --release R --as NAME`: the next release proposed from the indexes.

For a release made from public wheels, the newest leader (torch) its policy (`bump:` in the manifest)
admits, with everything the whole set then resolves to at its newest (resolve.py runs pip's resolver;
propose.py chooses and explains); for NVIDIA's releases a draft whose NVIDIA-chosen values are UNKNOWN
(nvidia.py). texts.py writes the proposal as a short manifest that extends R and its constraints;
apply.py loads and verifies it in a scratch copy of the project before anything is written, then
writes both files or neither; report.py is build/NAME/bump.md. Reads only through verify's pip runner
and index reader, and wheels' own files through core/http (wheel_file.py)."""
