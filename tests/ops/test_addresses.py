"""Who is asking: the client's address behind trusted proxies (pure functions, no database)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from apps.ops.domain.addresses import address_in, client_address, parse_networks

LOOPBACK = parse_networks(("127.0.0.1", "::1"))


def test_a_direct_client_is_its_peer_whatever_it_claims():
    assert client_address("203.0.113.7", "127.0.0.1", LOOPBACK) == "203.0.113.7"


def test_behind_the_local_proxy_the_client_is_the_address_it_appended():
    assert client_address("127.0.0.1", "203.0.113.7", LOOPBACK) == "203.0.113.7"


def test_a_forged_entry_left_of_the_proxys_is_ignored():
    assert client_address("127.0.0.1", "127.0.0.1, 203.0.113.7", LOOPBACK) == "203.0.113.7"


def test_a_chain_of_trusted_proxies_is_walked_from_the_right():
    trusted = parse_networks(("127.0.0.1", "10.0.0.0/8"))
    assert client_address("127.0.0.1", "198.51.100.4, 10.1.2.3", trusted) == "198.51.100.4"


def test_a_header_without_an_address_leaves_the_peer():
    assert client_address("127.0.0.1", "not-an-address", LOOPBACK) == "127.0.0.1"


def test_ipv4_mapped_ipv6_peer_counts_as_its_ipv4_address():
    assert address_in("::ffff:127.0.0.1", LOOPBACK) is True
    assert address_in("", LOOPBACK) is False


ips = st.one_of(st.ip_addresses(v=4), st.ip_addresses(v=6)).map(str)


@given(peer=ips, hops=st.lists(ips, max_size=5))
def test_the_client_is_the_peer_or_one_of_the_forwarded_addresses(peer, hops):
    client = client_address(peer, ", ".join(hops), LOOPBACK)
    assert client == peer or client in hops


@given(
    forged=st.lists(ips, max_size=4), real=st.ip_addresses(v=4).filter(lambda ip: not ip.is_loopback).map(str)
)
def test_nothing_a_client_writes_can_hide_its_real_address(forged, real):
    header = ", ".join([*forged, real])  # nginx appends the address it saw last
    assert client_address("127.0.0.1", header, LOOPBACK) == real
