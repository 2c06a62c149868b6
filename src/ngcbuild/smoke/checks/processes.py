"""Subprocesses of the checks, in the form every image's Python has: Python 3.6 has no
`capture_output=` or `text=` (3.7), so output is piped and decoded the older way."""

import subprocess


def run(command, timeout=None, check=False, env=None):
    """subprocess.run with stdout and stderr captured as text."""
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=timeout, check=check, env=env)
