"""smoke/run_limits.py: NGC's run flags, lowered one refusal at a time to what an engine may set, with
the refusals engines answer (runc's words, as Docker 20.10 and Podman 4.3 pass them on)."""

from __future__ import annotations

import resource

from ngcbuild.smoke.run_limits import MOST_ATTEMPTS, NGC_LIMITS, Limits, candidates

RUNC = ("runc: runc create failed: unable to start container process: error during container init: error "
        "setting rlimits for ready process: error setting rlimit type {}: operation not permitted: OCI permission denied")


def _ulimits(limits: Limits) -> dict:
    return {u["Name"]: (u["Soft"], u["Hard"]) for u in limits.host_config_flags()["ulimits"]}


def test_ngc_flags_first():
    limits = Limits()
    assert _ulimits(limits) == {"memlock": (-1, -1), "stack": (67108864, 67108864)}
    assert limits.host_config_flags()["shm_size"] == "1g"


def test_each_refusal_lowers_the_limit_it_names_and_says_so():
    limits = Limits()
    note = limits.lower(RUNC.format(8))
    assert note.startswith("note: this engine may not set memlock to unlimited; running with memlock=")
    assert _ulimits(limits)["memlock"][0] == candidates("memlock")[0]
    # Podman sets the open files and processes of every container itself: refused, they are named too
    note = limits.lower(RUNC.format(7))
    assert "nofile to the engine's default" in note
    assert _ulimits(limits)["nofile"][0] == candidates("nofile")[0]
    assert limits.lower(RUNC.format(6)) is not None and "nproc" in _ulimits(limits)
    assert limits.lowered[0].startswith("memlock unlimited -> ")


def test_a_limit_is_lowered_until_nothing_is_left_then_given_up():
    limits = Limits()
    tried = []
    for _ in range(MOST_ATTEMPTS):
        if limits.lower(RUNC.format(6)) is None:
            break
        tried.append(limits.values["nproc"])
    assert tried == sorted(tried, reverse=True) and len(set(tried)) == len(tried) == len(candidates("nproc"))
    assert limits.lower(RUNC.format(6)) is None  # nothing lower: the caller gives the engine's refusal


def test_a_refusal_naming_no_limit_we_set_is_not_guessed_at():
    limits = Limits()
    assert limits.lower("error setting rlimit type 0: operation not permitted") is None
    assert limits.lower("no such image") is None
    assert limits.values == NGC_LIMITS


def test_an_old_refusal_without_a_number_lowers_memlock_once():
    limits = Limits()
    assert limits.lower("OCI runtime create failed: setrlimit: operation not permitted (rlimit)") is not None
    assert limits.values["memlock"] != -1
    assert limits.lower("OCI runtime create failed: setrlimit: operation not permitted (rlimit)") is None


def test_candidates_are_this_machines_limits_then_floors():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    found = candidates("nofile")
    assert found == sorted(set(found), reverse=True) and 1024 in found
    own = [value for value in (hard, soft) if value != resource.RLIM_INFINITY]
    assert found[:len(set(own))] == sorted(set(own), reverse=True)  # what an engine started here has, first
