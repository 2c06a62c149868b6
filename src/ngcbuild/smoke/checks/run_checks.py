"""Entry point of the smoke suite inside the image: the locked pytest of this Python comes from a
read-only mount put first on sys.path (a pytest the image carries never mixes with it), plugins the
image may have installed are not loaded, then the checks run."""

import os
import sys

sys.path.insert(1, os.path.join(os.environ.get("NGCBUILD_SMOKE_DIR", "/opt/ngcbuild"), "pytest"))
# An image's own pytest plugins were made for its pytest, not for the locked one.
os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"

import pytest  # noqa: E402

sys.exit(pytest.main(sys.argv[1:]))
