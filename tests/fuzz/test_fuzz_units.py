"""Pure parts of the fuzzer: hostile encodings really are malformed, truncation, budgets, replay files."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdcp_conformance.errors import InvalidArgument, MalformedMessage
from sdcp_conformance.fuzz import hostile, replay
from sdcp_conformance.fuzz.campaign import parse_budget
from sdcp_conformance.fuzz.model import truncate
from sdcp_conformance.fuzz.steps import Step
from sdcp_conformance.protocol.codec import decode, encode

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
    path = replay.save(tmp_path, "stateful", [step.to_json() for step in steps], "boom", "FAILED", mutant="x")
    loaded = replay.load(path)
    assert loaded.stateful_steps() == steps
    assert loaded.mutant == "x" and loaded.message == "boom"
    assert f"--replay {path}" in path.read_text()


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
