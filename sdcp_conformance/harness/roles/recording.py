"""Every request the IUT sends a party the harness plays goes into the transcript of the case it serves.

One wrapper for every played party of every role: the party's handler answers, the wrapper checks the answer
against ``sdcp.cddl`` (:mod:`~..self_check`: a malformed one is a harness bug in the cases it serves) and records
the exchange (method, target, bodies, status, content type, an injected fault) into whichever transcripts
``transcript`` finds for the request — the one case running, or, where cases run at the same time, the case the request
belongs to (by the object's path for the cache, by the session for the router).
"""

from __future__ import annotations

from collections.abc import Callable

from sdcp_conformance.harness.self_check import record_response
from sdcp_conformance.harness.transcript import CaseTranscript
from sdcp_conformance.transport.types import Handler, Request, Response


class Recorder:
    """Wraps a handler so that every request the IUT sends it lands in the transcript of the case it serves.

    ``transcript(request)`` finds that case: by the object's path for the
    cache (each case names its objects under its own prefix), by the session
    for the router (an event names it), so cases running at the same time
    keep their evidence apart.
    """

    def __init__(self, party: str, inner: Handler,
                 transcript: Callable[[Request], list[CaseTranscript]]) -> None:
        self.party = party
        self._inner = inner
        self._transcript = transcript

    async def __call__(self, request: Request) -> Response:
        response = await self._inner(request)
        transcripts = self._transcript(request)
        record_response(transcripts, self.party, request, response)  # a malformed answer is the harness's bug
        if transcripts:
            target = request.path + (f"?{request.query}" if request.query else "")
            note = f"fault: {response.fault.value}" if response.fault is not None else ""
            for transcript in transcripts:
                transcript.record("from-iut", self.party, request.method, target, request.body, response.status,
                                  response.body, content_type=response.header("content-type"), note=note)
        return response


def current_only(current: Callable[[], CaseTranscript | None]) -> Callable[[Request], list[CaseTranscript]]:
    """The transcript finder of an environment whose cases run one at a time: the current case's."""

    def find(request: Request) -> list[CaseTranscript]:
        transcript = current()
        return [transcript] if transcript is not None else []

    return find


__all__ = ["Recorder", "current_only"]
