"""engine/compare.py: repro's report of two images that differ, from what the images say (no engine)."""

from ngcbuild.engine.compare import Comparison, Entry, LayerDifference, config_differences, differing_files

SECRET = "S3CR3T"


def _entry(link="", sha="a"):
    return Entry("file", 1, 0o644, "0:0", 0, link, sha)


def test_what_the_images_say_is_escaped_one_line_each():
    # file names, link targets and label keys are the images' own text: ESC, BEL and newlines in them
    files = differing_files({"etc/\x1b[2Jx": _entry(), "usr/a\nfake: line": _entry()},
                            {"etc/\x1b[2Jx": _entry(sha="b"), "usr/a\nfake: line": _entry(link="\x1b]0;t\x07")})
    config = config_differences({"config": {"Labels": {"k\x1b[31m\nforged": "1"},
                                            "Env": [f"PIP_INDEX_URL=https://u:{SECRET}@h.example/s"]}},
                                {"config": {"Labels": {"k\x1b[31m\nforged": "2"}, "Env": ["X=1"]}})
    report = Comparison("sha256:1", "sha256:2", [LayerDifference(0, "sha256:a", "sha256:b", files)], config)
    lines = report.lines()
    assert len(lines) == 1 + len(config) + 1 + len(files)
    for line in lines:
        assert "\n" not in line and "\x1b" not in line and "\x07" not in line, line
        assert SECRET not in line
    assert any("/etc/\\x1b[2Jx: content" in line for line in lines)
    assert any("config config.Labels.k\\x1b[31m\\x0aforged" in line for line in lines)
