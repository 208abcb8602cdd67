"""Pure parts of the fuzzer: hostile encodings really are malformed, truncation, budgets, replay files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.fuzz import hostile, replay
from sdcp_conformance.fuzz.campaign import parse_budget
from sdcp_conformance.fuzz.identity import FuzzedIut
from sdcp_conformance.fuzz.model import truncate
from sdcp_conformance.fuzz.steps import Step
from sdcp_conformance.protocol.codec import decode, encode
from sdcp_conformance.protocol.errors import MalformedMessage

MESSAGE = {"session": bytes(16), "epoch": 1, "tokens": [1, 2, 3], "contract": {"m_max": 8, "stop": []}}


@pytest.mark.parametrize("raw", [hostile.deep_array(40), hostile.deep_map(40), hostile.huge_bstr(1 << 63),
                                 hostile.huge_array(1 << 32), hostile.tagged(24, 5), hostile.tagged(55799, 5)])
def test_raw_members_make_the_message_malformed_for_a_strict_decoder(raw: bytes) -> None:
    with pytest.raises(MalformedMessage):
        decode(hostile.encode_patched(MESSAGE, ("contract", "m_max"), raw))


def test_patching_with_the_member_itself_is_the_deterministic_encoding() -> None:
    assert hostile.encode_patched(MESSAGE, ("epoch",), encode(1)) == encode(MESSAGE)
    assert decode(hostile.encode_patched(MESSAGE, ("epoch",), None)) == {k: v for k, v in MESSAGE.items()
                                                                         if k != "epoch"}


@pytest.mark.parametrize("same", [True, False])
def test_duplicate_keys_truncation_and_trailing_bytes_are_malformed(same: bool) -> None:
    body = encode(MESSAGE)
    for bad in (hostile.duplicate_key(MESSAGE, "epoch", 1 if same else "x"), hostile.truncated(body, 7),
                hostile.trailing(body, 3)):
        with pytest.raises(MalformedMessage):
            decode(bad)


def test_truncation_after_the_first_stop_token_and_at_max_new() -> None:
    assert truncate([4, 2, 5], [2], 10, 0) == ([4, 2], True)
    assert truncate([4, 5, 6], [], 5, 3) == ([4, 5], True)
    assert truncate([4, 5], [], 10, 3) == ([4, 5], False)


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90.0), ("10m", 600.0), ("1h", 3600.0), ("5", 5.0)])
def test_budgets(text: str, seconds: float) -> None:
    assert parse_budget(text) == seconds


def test_a_bad_budget_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        parse_budget("ten minutes")


def test_replay_files_keep_the_steps_and_the_command(tmp_path: Path) -> None:
    steps = [Step("open", {"rule": 1, "stop_at": None}), Step("propose", {"s": 0, "kind": "valid"})]
    path = replay.save(tmp_path, "stateful", [step.to_json() for step in steps], "boom", "FAILED",
                       iut=FuzzedIut(mutant="x"))
    loaded = replay.load(path)
    assert loaded.stateful_steps() == steps
    assert loaded.mutant == "x" and loaded.message == "boom" and loaded.iut == FuzzedIut("verifier", "x")
    assert json.loads(path.read_text())["replay"] == f"sdcp-conformance fuzz --replay {path.resolve()} --mutant x"


def test_a_replay_file_from_before_the_iut_was_recorded_is_the_embedded_reference_s(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"format": replay.FORMAT, "kind": "stateful", "failure": "boom", "level": "FAILED",
                                "mutant": "x", "seed": 1, "replay": "sdcp-conformance fuzz --replay old.json",
                                "steps": [Step("open", {"rule": 1}).to_json()]}))
    loaded = replay.load(path)
    assert loaded.iut.embedded and loaded.iut.role == "verifier" and loaded.mutant == "x"


def test_the_replay_command_names_the_role_and_the_target() -> None:
    drafter = FuzzedIut("drafter", target="/t/my target.toml", base_uri="https://d/", certificate="sha256:00")
    assert drafter.replay_command(Path("/f/x.json")) == \
        "sdcp-conformance fuzz --role drafter --replay /f/x.json --target '/t/my target.toml'"


@pytest.mark.parametrize(("other", "reason"), [
    (FuzzedIut(), "without --target it would run the embedded reference verifier"),
    (FuzzedIut(target="/u.toml", base_uri="https://v2/", certificate="sha256:aa"), "names another IUT, https://v2/"),
    (FuzzedIut(target="/u.toml", base_uri="https://v/", certificate="sha256:bb"), "another certificate, sha256:bb"),
    (FuzzedIut(target="/u.toml", base_uri="https://v/", certificate=None), "presented no certificate"),
])
def test_another_iut_than_the_recorded_target_is_told_apart(other: FuzzedIut, reason: str) -> None:
    recorded = FuzzedIut(target="/t.toml", base_uri="https://v/", certificate="sha256:aa")
    found = recorded.difference(other)
    assert found is not None and reason in found
    assert recorded.difference(FuzzedIut(target="/elsewhere/copy.toml", base_uri="https://v/",
                                         certificate="sha256:aa")) is None  # the same IUT, named by another file


def test_the_embedded_reference_is_told_apart_by_its_planted_bug() -> None:
    assert FuzzedIut(mutant="x").difference(FuzzedIut(mutant="x")) is None
    assert FuzzedIut(mutant="x").difference(FuzzedIut()) is not None
    assert FuzzedIut(mutant="x").difference(FuzzedIut(mutant="y")) is not None
    assert FuzzedIut().difference(FuzzedIut(target="/t.toml", base_uri="https://v/")) is not None


def test_a_file_of_another_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"format": "other"}')
    with pytest.raises(InvalidArgument):
        replay.load(path)


def test_the_redis_database_is_imported_lazily_and_its_absence_reported() -> None:
    from sdcp_conformance.fuzz.database import open_database

    try:
        import redis  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        with pytest.raises(InvalidArgument, match="redis"):
            open_database("redis://127.0.0.1:1/0")
    assert open_database("") is None
