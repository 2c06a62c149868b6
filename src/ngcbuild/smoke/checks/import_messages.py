"""Import one module as a user's `import NAME` would, in a fresh interpreter of the image, and print what
the import said as JSON on a line of its own: each warning Python's default filters show (as the user
would see it), and each logged message that says something is skipped (torchao's "Skipping import of
cpp extensions ..."), at any level and from any logger. Runs on every release's Python, 3.6 included."""

import json
import logging
import sys
import traceback
import warnings

MARK = "ngcbuild-import-report "


class _Skipping(logging.Handler):
    """Keeps each logged message that says it skips something (the word, in any case)."""

    def __init__(self):
        logging.Handler.__init__(self, logging.DEBUG)
        self.lines = []

    def emit(self, record):
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: its raw text
            message = str(record.msg)
        if "skip" in message.lower():
            self.lines.append("%s (%s): %s" % (record.levelname, record.name, " ".join(message.split())))


def main(module):
    skipping = _Skipping()
    root = logging.getLogger()
    root.addHandler(skipping)
    root.setLevel(logging.DEBUG)
    error = None
    with warnings.catch_warnings(record=True) as caught:
        try:
            __import__(module)  # from __main__, as `import NAME` in a user's script
        except BaseException:  # the report says why; the check fails on it
            error = traceback.format_exc(limit=3).strip().splitlines()[-1]
    shown = ["%s: %s (%s:%s)" % (w.category.__name__, " ".join(str(w.message).split()), w.filename, w.lineno)
             for w in caught]
    report = {"module": module, "error": error, "warnings": shown, "skipping": skipping.lines}
    sys.stdout.write("\n" + MARK + json.dumps(report) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
