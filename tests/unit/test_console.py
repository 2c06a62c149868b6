"""core/console.py: the streams every entry point installs. In-process halves of what the corpus proves
with real processes (tests/corpus/every_task.py): a reader gone away, a character the encoding lacks,
a credential in what is printed, a stream without a descriptor (a test run's capture)."""

from __future__ import annotations

import io
import os

from ngcbuild.core.console import Stream


class Gone(io.StringIO):
    """A stream whose reader went away after the first write."""

    def __init__(self):
        super().__init__()
        self.writes = 0

    def write(self, text):
        self.writes += 1
        if self.writes > 1:
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(text)


def test_a_reader_gone_away_swallows_the_rest_without_an_error():
    under = Gone()
    stream = Stream(under)
    stream.write("first\n")
    stream.write("second\n")  # the pipe broke here: no error, and nothing more is tried
    stream.write("third\n")
    stream.flush()
    assert stream.gone and under.getvalue() == "first\n" and under.writes == 2


def test_a_character_the_encoding_lacks_is_escaped():
    raw = io.BytesIO()
    under = io.TextIOWrapper(raw, encoding="ascii", errors="strict")
    under.reconfigure(errors="backslashreplace")
    stream = Stream(under)
    stream.write("naïve — 漢\n")
    stream.flush()
    assert raw.getvalue() == b"na\\xefve \\u2014 \\u6f22\n"


def test_what_is_printed_is_masked_as_a_last_net():
    under = io.StringIO()
    Stream(under).write("index https://u:S3CR3T@h.example/simple?token=T0K\n")
    assert "S3CR3T" not in under.getvalue() and "T0K" not in under.getvalue()


def test_a_stream_without_a_descriptor_is_written_to_as_it_is():
    """pytest's capture has no fileno(): it is no closed stream, and what is written reaches it."""
    under = io.StringIO()
    stream = Stream(under)
    stream.write("captured\n")
    assert under.getvalue() == "captured\n" and not stream.gone and not stream.isatty()


def test_a_broken_descriptor_is_pointed_at_dev_null(tmp_path):
    read, write = os.pipe()
    os.close(read)
    under = os.fdopen(write, "w", encoding="utf-8")
    stream = Stream(under)
    stream.write("x" * 100_000)  # EPIPE: the descriptor becomes /dev/null
    stream.flush()
    assert stream.gone and os.path.samefile(f"/proc/self/fd/{write}", os.devnull)
    under.close()
