"""The transcript: every exchange kept, bodies as CBOR diagnostic notation, large blobs summarised."""

from __future__ import annotations

import json
import struct

import pytest

from sdcp_conformance.cache.app import CacheApp
from sdcp_conformance.cache.transcript import Transcript, render_body
from sdcp_conformance.errors import InvalidArgument
from tests.cache.helpers import request, run

FENCE_2 = b"\xa1\x65epoch\x02"  # {"epoch": 2}
FENCE_3 = b"\xa1\x65epoch\x03"


def test_a_cbor_item_is_rendered_in_diagnostic_notation() -> None:
    assert render_body(FENCE_2) == '{"epoch":2}'
    assert render_body(b"\x83\x01\x02\x03") == "[1,2,3]"


def test_a_cbor_sequence_such_as_a_commit_log_is_rendered_item_by_item() -> None:
    assert render_body(FENCE_2 + FENCE_3) == '{"epoch":2}, {"epoch":3}'


def test_raw_float32_rows_are_summarised_by_length_and_first_bytes() -> None:
    rows = struct.pack("<f", 0.5) * (256 * 1024)  # 1 MiB of q_rows
    rendered = render_body(rows)
    assert rendered == "<1048576 bytes: h'" + "0000003f" * 4 + "'…>"


def test_a_long_commit_log_is_rendered_whole() -> None:
    epochs = [epoch % 24 for epoch in range(480)]
    log = b"".join(b"\xa1\x65epoch" + bytes([epoch]) for epoch in epochs)  # 480 maps, over 1 KiB
    assert len(log) > 1024
    assert render_body(log) == ", ".join(f'{{"epoch":{epoch}}}' for epoch in epochs)


def test_a_large_blob_that_scans_as_many_small_items_is_summarised() -> None:
    # Zero float32 rows are a well-formed CBOR sequence of 0s; a row starting with an empty map (0xa0) too.
    zeros = bytes(2048)
    assert render_body(zeros) == "<2048 bytes: h'" + "00" * 16 + "'…>"
    mapped = b"\xa0" + bytes(2047)
    assert render_body(mapped) == "<2048 bytes: h'a0" + "00" * 15 + "'…>"


def test_a_small_body_with_items_after_a_message_shows_them_all() -> None:
    # A hostile answer's trailing items stay visible in the transcript, whatever they are.
    assert render_body(FENCE_2 + b"\x05\x06") == '{"epoch":2}, 5, 6'


def test_a_large_single_item_is_rendered() -> None:
    body = b"\x99" + (1500).to_bytes(2, "big") + bytes([7]) * 1500  # [7, 7, ...], 1,503 bytes
    assert render_body(body) == "[" + ",".join(["7"] * 1500) + "]"


def test_small_non_cbor_bytes_are_summarised_too() -> None:
    assert render_body(b"\xff\x00") == "<2 bytes: h'ff00'>"


def test_json_and_text_bodies_are_shown_as_text() -> None:
    assert render_body(b'{"status": 412}', "application/problem+json") == '{"status": 412}'
    assert render_body(b"hello", "text/plain; charset=utf-8") == "hello"


def test_an_empty_body_is_an_empty_string() -> None:
    assert render_body(b"") == ""


def test_the_app_records_method_path_status_headers_and_bodies() -> None:
    transcript = Transcript()
    app = CacheApp(transcript=transcript)
    run(app(request("PUT", "/log", FENCE_2, {"If-None-Match": "*"})))
    run(app(request("GET", "/log")))
    run(app(request("GET", "/none")))
    put, got, missing = transcript.entries
    assert (put.sequence, put.method, put.path, put.status) == (1, "PUT", "/log", 201)
    assert put.request_headers == (("if-none-match", "*"),)
    assert put.request_body == '{"epoch":2}'
    assert put.peer == "https://127.0.0.1/router/"
    etag = dict(put.response_headers)["etag"]
    assert (got.status, got.response_body, dict(got.response_headers)["etag"]) == (
        200,
        '{"epoch":2}',
        etag,
    )
    assert missing.status == 404
    assert json.loads(missing.response_body)["status"] == 404
    assert json.loads(json.dumps(transcript.to_json()))[0]["request_body"] == '{"epoch":2}'


def test_a_limited_transcript_keeps_the_latest_exchanges_with_their_numbers() -> None:
    transcript = Transcript(limit=2)
    app = CacheApp(transcript=transcript)
    for _ in range(5):
        run(app(request("GET", "/none")))
    assert [entry.sequence for entry in transcript.entries] == [4, 5]
    with pytest.raises(InvalidArgument):
        Transcript(limit=0)
