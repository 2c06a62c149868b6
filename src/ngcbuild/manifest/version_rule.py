"""The one rule for "what a module (or a label, an interpreter) reports is the version the manifest
states", used by every check of the smoke suite and by `invoke verify`.

Exactly what it accepts, part by part (both sides read as PEP 440 in the spellings pip normalises):
- epoch: equal.
- release: the stated parts equal (trailing zeros are the same release: 13.1 is 13.1.0); a manifest that
  states less accepts a later point of what it states (`2.10` accepts 2.10.3, `2.10.0` accepts 2.10.0.1),
  but only where it states no pre-, post- or dev release itself (`2.10.0a0` refuses 2.10.0.1).
- pre- and dev release: the reported version's own, for the stated release and a later point of it alike,
  equal to the stated ones: `2.10.0a0` refuses 2.10.0, `2.10.0` refuses 2.10.0rc1 and a later point's
  pre- or dev release (2.10.0.1.dev0, 1.52.0.1rc1: not final releases of anything the manifest states).
- post-release: where the manifest states one, equal (`10.14.1.48.post1` refuses 10.14.1.48); where it
  states none, any (a post-release re-packages the release: `10.14.1.48` accepts PyPI's .post1, and
  2.10.0.1.post1 under `2.10.0` as 2.10.0.1).
- local part (`+b4e4ee81d3.nv25.12`): any where the manifest states none (TE's 2.10.0+769ed778 under
  `2.10.0`); where it states one, the same number of segments, each equal, except that a segment the
  manifest states as a commit hash of letters and digits (hex digits, at least one a-f and one 0-9, an
  optional word such as `git` before them) matches by prefix either way down to 7 characters: the banner's
  b4e4ee8 is torch.__version__'s b4e4ee81d3. A stated segment of digits only (20.12's `+1606899`) is
  compared whole: 16068990 is another number, not a longer hash. A suffix appended (`.nv99.99`) is another
  build.
- A stated version that is not PEP 440 (a vendor's own form, `12.2.2.009-dev`, `r36.4`): the reported text equal,
  or the stated text followed by more parts after `.`, `+` or `-` (`r36.4.0`).
- A reported version that is not PEP 440 where the manifest states one: refused, whatever follows the stated text
  (2.10.0.1.dev0.dirty, 1.52.0.1.post1rc1: read as text, a pre- or dev release of a later point would pass).

The standard library only, and Python 3.6's: the smoke suite's staging puts this file beside the expectations
it mounts into the image (smoke/staging.py, stage_expectations), whose interpreter has nothing of ngcbuild,
and the checks import it from there; verify and the host import it as ngcbuild.manifest.version_rule."""

import re

# PEP 440, in the spellings pip accepts (normalised below): epoch, release, pre, post, dev, local.
_PEP440 = re.compile(
    r"^\s*v?(?:(?P<epoch>[0-9]+)!)?(?P<release>[0-9]+(?:\.[0-9]+)*)"
    r"(?:[-_.]?(?P<pre_l>alpha|beta|preview|pre|rc|a|b|c)[-_.]?(?P<pre_n>[0-9]+)?)?"
    r"(?:-(?P<post_implicit>[0-9]+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n>[0-9]+)?)?"
    r"(?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$",
    re.IGNORECASE)
_PRE = {"a": "a", "alpha": "a", "b": "b", "beta": "b", "c": "rc", "rc": "rc", "pre": "rc", "preview": "rc"}
# A local segment that names a commit: an optional word (git, g) and 7 or more hex digits. Only a stated
# segment whose digits hold a letter and a digit is taken for a hash (_stated_hash): digits alone could as well
# be a number, whose longer form is another number.
_HASH = re.compile(r"^([a-z]*?)([0-9a-f]{7,40})$")
SHORTEST_HASH = 7


class _Parsed(object):
    __slots__ = ("epoch", "release", "pre", "post", "dev", "local")


def parse(text):
    """The parts of a PEP 440 version (None where `text` is not one): epoch, release (a tuple of ints),
    pre (('a', 0)-like or None), post, dev (ints or None), local (a tuple of lower-case segments)."""
    match = _PEP440.match(str(text))
    if not match:
        return None
    parts = _Parsed()
    parts.epoch = int(match.group("epoch") or 0)
    parts.release = tuple(int(p) for p in match.group("release").split("."))
    parts.pre = (_PRE[match.group("pre_l").lower()], int(match.group("pre_n") or 0)) if match.group("pre_l") else None
    if match.group("post_implicit") is not None:
        parts.post = int(match.group("post_implicit"))
    elif match.group("post_l"):
        parts.post = int(match.group("post_n") or 0)
    else:
        parts.post = None
    parts.dev = int(match.group("dev_n") or 0) if match.group("dev_l") else None
    local = match.group("local")
    parts.local = tuple(re.split(r"[-_.]", local.lower())) if local else ()
    return parts


def mismatch(reported, stated):
    """None when `reported` is a form of the `stated` version; otherwise why not, in a few words."""
    reported, stated = str(reported).strip(), str(stated).strip()
    have, want = parse(reported), parse(stated)
    if have is None and want is not None:
        return "{} is not a PEP 440 version (the manifest states {}, which is one)".format(reported, stated)
    if want is None:
        # A vendor's own form stated: equal, or the stated text followed by more parts.
        if reported == stated or (reported.startswith(stated) and reported[len(stated):][:1] in (".", "+", "-")):
            return None
        return "{} is not {} (compared as text: not a PEP 440 version)".format(reported, stated)
    if have.epoch != want.epoch:
        return "epoch {} is not {}".format(have.epoch, want.epoch)
    stated_parts = len(want.release)
    release = have.release + (0,) * max(0, stated_parts - len(have.release))
    if release[:stated_parts] != want.release:
        return "release {} is not {}".format(_dotted(have.release), _dotted(want.release))
    # 2.10.3 under a stated 2.10: a later point of the stated series, accepted only where nothing more is stated
    if any(release[stated_parts:]) and (want.pre is not None or want.post is not None or want.dev is not None):
        return "{} is a later release than {}".format(_dotted(have.release), stated)
    # the reported version's own pre- and dev release are judged alike for the stated release and a later
    # point of it: 2.10.0.1.dev0 is no final release of 2.10.0
    if have.pre != want.pre:
        return "pre-release {} is not {}".format(_segment(have.pre), _segment(want.pre))
    if have.dev != want.dev:
        return "dev release {} is not {}".format(_number(have.dev), _number(want.dev))
    # a post-release re-packages the release: a manifest without one accepts it
    if want.post is not None and have.post != want.post:
        return "post-release {} is not {}".format(_number(have.post), _number(want.post))
    return _local_mismatch(have.local, want.local)


def reports(reported, stated):
    """Whether `reported` is a form of the `stated` version (mismatch() says why not)."""
    return mismatch(reported, stated) is None


def accepts(stated):
    """What the rule accepts for `stated`, in words (for messages and verify's rows)."""
    want = parse(stated)
    if want is None:
        return "{} as written, or followed by more parts".format(stated)
    public = str(stated).strip().split("+", 1)[0]
    said = public
    if want.pre is None and want.post is None and want.dev is None:
        said += " or {}.N".format(public)
    if want.post is None:
        said += " (post-releases too)"
    if not want.local:
        return said + ", with any local part"
    said += ", with the local part +{}".format(".".join(want.local))
    if any(_stated_hash(segment) for segment in want.local):
        said += " (a commit hash abbreviated to {} characters or more)".format(SHORTEST_HASH)
    return said


def _local_mismatch(have, want):
    if not want:
        return None  # the manifest states no local part: any build of the version
    if not have:
        return "no local part, the manifest states +{}".format(".".join(want))
    # stated, it is compared whole: a suffix appended (.nv99.99, another release's build) is another build
    if len(have) != len(want) or not all(_same_segment(have[i], want[i]) for i in range(len(want))):
        return "local part +{} is not +{}".format(".".join(have), ".".join(want))
    return None


def _stated_hash(segment):
    """The hash's match where the manifest's segment is a commit hash of letters and digits, else None."""
    match = _HASH.match(segment)
    if match and re.search(r"[a-f]", match.group(2)) and re.search(r"[0-9]", match.group(2)):
        return match
    return None


def _same_segment(have, want):
    if have == want:
        return True
    a, b = _HASH.match(have), _stated_hash(want)
    if not a or not b or a.group(1) != b.group(1):
        return False
    short, long = sorted((a.group(2), b.group(2)), key=len)
    return len(short) >= SHORTEST_HASH and long.startswith(short)


def _dotted(release):
    return ".".join(str(p) for p in release)


def _segment(pre):
    return "none" if pre is None else "{}{}".format(*pre)


def _number(value):
    return "none" if value is None else str(value)
