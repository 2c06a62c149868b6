"""Entry point of the smoke suite inside the image: pytest comes from a read-only mount that is
appended to sys.path (so the image's own packages win), then the checks run."""

import os
import sys

sys.path.append(os.path.join(os.environ.get("NGCBUILD_SMOKE_DIR", "/opt/ngcbuild"), "pytest"))

import pytest  # noqa: E402

sys.exit(pytest.main(sys.argv[1:]))
