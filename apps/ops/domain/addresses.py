"""Who is asking: the client's address behind proxies, and whether it is in a network list.

Pure functions (stdlib only), used by the client-address middleware and the monitoring gate.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from functools import lru_cache

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=32)
def parse_networks(values: tuple[str, ...]) -> tuple[Network, ...]:
    """Networks from ``"10.0.0.0/8"``, ``"127.0.0.1"`` (one address) or ``"::1"`` strings."""
    return tuple(ipaddress.ip_network(v, strict=False) for v in values)


def address_in(address: str, networks: Iterable[Network]) -> bool:
    """Whether ``address`` (IPv4, IPv6, or IPv4-mapped IPv6) lies in one of ``networks``;
    a string that is not an address is in none."""
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip.version == net.version and ip in net for net in networks)


def client_address(peer: str, forwarded_for: str, trusted: Iterable[Network]) -> str:
    """The client's address for a request from ``peer`` carrying ``X-Forwarded-For``.

    Only a trusted proxy's header counts. Each proxy appends the address it saw, so the list
    is read from the right: the first address that is not itself a trusted proxy is the
    client (anything left of it was written by the client and may be forged). A header that
    holds no valid address leaves the peer as the client.
    """
    trusted = tuple(trusted)
    if not forwarded_for or not address_in(peer, trusted):
        return peer
    client = peer
    for hop in reversed([h.strip() for h in forwarded_for.split(",")]):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            break
        client = hop
        if not address_in(hop, trusted):
            break
    return client
