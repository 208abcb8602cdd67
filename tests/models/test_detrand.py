"""The SHAKE-256 integers behind every mock weight, recomputed step by step with hashlib."""

from __future__ import annotations

import hashlib

import pytest

from sdcp_conformance.errors import InvalidArgument
from sdcp_conformance.models.detrand import DOMAIN, hash_choice, hash_ints, hash_permutation


def test_hash_ints_match_shake256_computed_by_hand() -> None:
    stream = hashlib.shake_256(f"{DOMAIN}/some/label".encode()).digest(4 * 5)
    expected = [int.from_bytes(stream[4 * i : 4 * i + 4], "big") % 21 - 10 for i in range(5)]
    assert hash_ints("some/label", 5, -10, 10).tolist() == expected


def test_hash_ints_stay_in_range_and_depend_on_the_label() -> None:
    values = hash_ints("range", 10_000, 3, 7)
    assert set(values.tolist()) == {3, 4, 5, 6, 7}
    assert hash_ints("a", 32, 0, 1000).tolist() != hash_ints("b", 32, 0, 1000).tolist()


def test_hash_choice_is_the_first_of_hash_ints() -> None:
    assert hash_choice("x", 0, 99) == int(hash_ints("x", 3, 0, 99)[0])


def test_hash_permutation_is_a_permutation_and_not_the_identity() -> None:
    order = hash_permutation("perm", 50)
    assert sorted(order) == list(range(50))
    assert order != list(range(50))


@pytest.mark.parametrize(("count", "low", "high"), [(-1, 0, 1), (1, 5, 4), (1, 0, 1 << 20)])
def test_hash_ints_refuses_bad_requests(count: int, low: int, high: int) -> None:
    with pytest.raises(InvalidArgument):
        hash_ints("bad", count, low, high)
