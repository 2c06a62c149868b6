"""Print {name: version} of every distribution a plain interpreter of the image sees, as JSON.

importlib.metadata exists from Python 3.8; before, setuptools' pkg_resources reads the same
metadata (every image of those eras has setuptools)."""

import json

try:
    from importlib import metadata  # novermin: Python < 3.8 takes the fallback below
except ImportError:  # Python < 3.8
    metadata = None


def distributions():
    if metadata is not None:
        return {d.metadata["Name"]: d.version for d in metadata.distributions() if d.metadata["Name"]}
    import pkg_resources

    return {d.project_name: d.version for d in pkg_resources.working_set}


if __name__ == "__main__":
    print(json.dumps(distributions()))
