"""The texts the harness is keyed to, shipped with the package: the SDCP draft and the interop profile.

Cases quote these verbatim (a test checks every quote), reports cite them,
and the coverage table is built from the draft's requirement sentences. A
test compares these copies with the project's ground truth when it is present.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files

DRAFT = "draft-sdcp.txt"
PROFILE = "PROFILE.md"


@cache
def text(name: str) -> str:
    return files(__package__).joinpath(name).read_text(encoding="utf-8")


def normalize(passage: str) -> str:
    """Whitespace-insensitive form used to match quotes against the texts."""
    return re.sub(r"\s+", " ", passage.replace("¶", "")).strip()


def is_verbatim(quote: str) -> bool:
    """Whether ``quote`` (or each of its parts separated by ' ... ') appears in the draft or the profile."""
    haystacks = (normalize(text(DRAFT)), normalize(text(PROFILE)))
    parts = [part for part in normalize(quote).split(" ... ") if part]
    return bool(parts) and all(any(part in haystack for haystack in haystacks) for part in parts)


__all__ = ["DRAFT", "PROFILE", "is_verbatim", "normalize", "text"]
