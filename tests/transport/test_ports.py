"""D-PORTS-1: ports chosen for later binding lie below the ephemeral range, where no outgoing connection takes them."""

from __future__ import annotations

import random
import socket
from pathlib import Path

import pytest

from sdcp_conformance.transport import ports


def test_ports_are_drawn_below_the_ephemeral_range_and_are_bindable(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    usual = tmp_path / "ip_local_port_range"
    usual.write_text("32768\t60999\n")  # Linux's default, whatever this machine is set to
    monkeypatch.setattr(ports, "LOCAL_PORT_RANGE", usual)
    low = ports.ephemeral_low()
    assert low == 32768
    drawn = {ports.free_port() for _ in range(50)}
    assert all(ports.LOWEST_PORT <= port < low for port in drawn)
    assert len(drawn) > 40  # drawn at random, not one port over and over
    for port in list(drawn)[:5]:
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))


def test_a_seeded_global_random_does_not_make_two_processes_draw_alike() -> None:
    random.seed(7)
    first = [ports.free_port() for _ in range(5)]
    random.seed(7)
    second = [ports.free_port() for _ in range(5)]
    assert first != second


def test_a_port_in_use_is_not_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        with socket.socket() as other:
            other.bind(("127.0.0.1", 0))
            free = other.getsockname()[1]
        offered = iter([taken, taken, free])
        monkeypatch.setattr(ports, "LOWEST_PORT", 1024)
        monkeypatch.setattr(ports, "ephemeral_low", lambda: 65536)
        monkeypatch.setattr(ports._draw, "randint", lambda low, high: next(offered))
        assert ports.free_port() == free


def test_a_machine_without_room_below_its_ephemeral_range_gets_the_kernels_choice(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    wide = tmp_path / "ip_local_port_range"
    wide.write_text("1024\t65535\n")
    monkeypatch.setattr(ports, "LOCAL_PORT_RANGE", wide)
    assert ports.ephemeral_low() == 1024
    port = ports.free_port()
    assert port >= 1024
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))


def test_an_unreadable_range_assumes_the_iana_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ports, "LOCAL_PORT_RANGE", tmp_path / "absent")
    assert ports.ephemeral_low() == ports.IANA_EPHEMERAL_LOW
    assert ports.LOWEST_PORT <= ports.free_port() < ports.IANA_EPHEMERAL_LOW


def test_the_parties_of_one_target_never_share_a_port(monkeypatch: pytest.MonkeyPatch) -> None:
    """Independent draws may coincide (a router target names eight parties); a party given a URI keeps it."""
    with socket.socket() as one, socket.socket() as two:  # both held at once: two different ports
        one.bind(("127.0.0.1", 0))
        two.bind(("127.0.0.1", 0))
        free, second = one.getsockname()[1], two.getsockname()[1]
    offered = iter([free, free, free, second])  # the draw repeats itself before it moves on
    monkeypatch.setattr(ports, "free_port", lambda host="127.0.0.1": next(offered))
    uris = ports.loopback_base_uris(("iut", "cache", "router"), {"router": "https://example.test:9/router/"})
    assert uris == {"iut": f"https://127.0.0.1:{free}/iut/", "cache": f"https://127.0.0.1:{second}/cache/",
                    "router": "https://example.test:9/router/"}


def test_a_base_uri_without_a_port_is_served_on_the_https_port() -> None:
    """Every played party and every reference role binds through one reading of a base URI (RFC 9110 §4.2.2)."""
    assert ports.port_of("https://127.0.0.1:24680/verifier/") == 24680
    assert ports.port_of("https://verifier.example/sdcp/") == 443
    assert ports.port_of("https://[::1]:8443/") == 8443
