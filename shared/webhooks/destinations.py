"""Where a webhook may be delivered: public addresses only (docs/webhooks.md, docs/isolation.md).

A tenant registers a URL and memq's workers connect to its host. Were any host allowed,
a tenant could make the workers POST to Redis, PostgreSQL, the API's own surface, another
tenant's services on the same network or a cloud metadata address (server-side request
forgery). So every address a webhook's host resolves to must be public: not loopback,
private (RFC 1918, IPv6 unique local), link-local (where 169.254.169.254 answers),
multicast, unspecified, reserved or any other range that is not globally routable,
however it is written (``2130706433``, ``0x7f.1``, ``::ffff:127.0.0.1``, 6to4, NAT64 ...).

The check runs at registration and again at every delivery, and a delivery connects to the
addresses the check returned (``Target.addresses``), never looking the name up a second
time: a name that resolves to a public address when checked cannot be rebound to a
private one before the connection (DNS rebinding).

Pure policy (``literal_address``, ``forbidden``, ``Allowance``) and one seam for name
resolution (``Resolver``: ``system_resolver`` in production, a table in tests), put
together by ``Destinations.check``. ``MEMQ_WEBHOOK_ALLOW_DESTINATIONS`` opens named hosts or
networks for development and tests (the suite's receivers listen on 127.0.0.1); it is
empty by default.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from memq.shared.errors import ValidationError

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# host, port -> the addresses it resolves to (as text); raises OSError when it cannot.
Resolver = Callable[[str, int], Sequence[str]]

ALLOWANCE_VARIABLE = "MEMQ_WEBHOOK_ALLOW_DESTINATIONS"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HINT = (
    "webhooks are delivered only to public addresses (docs/webhooks.md); "
    f"for development, {ALLOWANCE_VARIABLE} opens named hosts or networks"
)

_RFC1918 = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")  # RFC 6598, carrier-grade NAT
_UNIQUE_LOCAL = ipaddress.IPv6Network("fc00::/7")  # RFC 4193
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))  # RFC 6052, 8215
_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated IPv4-compatible addresses
_HOST_NAME = re.compile(r"^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*$")


class DestinationRefused(ValidationError):
    """A webhook URL whose host is, or resolves to, an address memq does not deliver to.
    ``rule`` names what the address is (``loopback``, ``private``, ...); ``reason`` is the
    message without the URL (what a delivery records)."""

    def __init__(self, url: str, reason: str, rule: str) -> None:
        super().__init__(f"{url[:100]!r}: {reason}; {_HINT}", field="url")
        self.reason = reason
        self.rule = rule


class HostUnresolved(ValidationError):
    """A webhook URL whose host does not resolve now: refused at registration, tried again
    later at delivery (a name can come back)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, field="url")


# ---- pure policy -------------------------------------------------------------------------


def literal_address(host: str) -> Address | None:
    """``host`` as an IP address if it is written as one in any form a C resolver accepts:
    IPv4 and IPv6 text (an IPv6 zone is dropped), and inet_aton's shorthands: one to four
    dot-separated numbers, each decimal, octal (``0177``) or hex (``0x7f``), the last one
    filling the remaining bytes (``2130706433``, ``127.1``, ``0x7f.0.0.1``). None for a name."""
    text = host.strip().strip("[]").rstrip(".").lower()
    try:
        return ipaddress.ip_address(text.split("%", 1)[0] if ":" in text else text)
    except ValueError:
        pass
    parts = text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = []
    for part in parts:
        if re.fullmatch(r"0x[0-9a-f]*", part):
            values.append(int(part[2:] or "0", 16))
        elif re.fullmatch(r"0[0-7]*", part):
            values.append(int(part, 8))
        elif re.fullmatch(r"[1-9][0-9]*", part):
            values.append(int(part))
        else:
            return None
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        return None
    number = sum(v << (8 * (3 - i)) for i, v in enumerate(head)) + last
    return ipaddress.IPv4Address(number)


def _carried(address: Address) -> Iterator[tuple[Address, str]]:
    """The address itself, then every IPv4 address an IPv6 address carries and would reach."""
    yield address, ""
    if not isinstance(address, ipaddress.IPv6Address):
        return
    if address.ipv4_mapped is not None:
        yield address.ipv4_mapped, "IPv4-mapped"
    if address.sixtofour is not None:
        yield address.sixtofour, "6to4"
    if address.teredo is not None:
        yield address.teredo[1], "Teredo"
    for prefix in _NAT64:
        if address in prefix:
            yield ipaddress.IPv4Address(int(address) & 0xFFFFFFFF), "NAT64"
    if address in _COMPATIBLE and int(address) > 1:
        yield ipaddress.IPv4Address(int(address) & 0xFFFFFFFF), "IPv4-compatible"


def _kind(address: Address) -> tuple[str, str] | None:
    """(rule, the words an error message uses) for a non-public address, None for a public one."""
    if address.is_unspecified:
        return "unspecified", "unspecified"
    if address.is_loopback:
        return "loopback", "loopback"
    if address.is_link_local:
        return "link-local", "link-local"  # 169.254.169.254: cloud metadata services
    if address.is_multicast:
        return "multicast", "multicast"
    if isinstance(address, ipaddress.IPv4Address):
        if any(address in n for n in _RFC1918):
            return "private", "private (RFC 1918)"
        if address in _SHARED:
            return "private", "private (shared, RFC 6598: carrier-grade NAT)"
    else:
        if address in _UNIQUE_LOCAL:
            return "private", "private (unique local, RFC 4193)"
        if address.is_site_local:
            return "private", "private (site-local)"
    if address.is_reserved:
        return "reserved", "reserved"
    if not address.is_global:
        return "reserved", "reserved (special-purpose, not globally routable)"
    return None


@dataclass(frozen=True)
class Forbidden:
    """Why an address is refused: ``rule`` (``unspecified``, ``loopback``, ``link-local``,
    ``multicast``, ``private`` or ``reserved``) and the words that say so."""

    rule: str
    words: str


def forbidden(address: Address) -> Forbidden | None:
    """Why ``address`` may not be delivered to, None for a public address. An IPv6 address
    that carries an IPv4 address it would reach (6to4, Teredo, NAT64) is judged by that
    one first, then by itself; an IPv4-mapped one is the IPv4 address it maps."""
    carried = list(_carried(address))
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        carried = carried[1:2]  # an IPv4-mapped address is the IPv4 address, nothing else
    else:
        carried = carried[1:] + carried[:1]
    for candidate, how in carried:
        kind = _kind(candidate)
        if kind is not None:
            rule, words = kind
            return Forbidden(rule, f"{words} ({how} {candidate})" if how else words)
    return None


@dataclass(frozen=True)
class Allowance:
    """Hosts and networks webhooks may reach although they are not public: for development
    and tests only. A named host is allowed whatever it resolves to; an address inside an
    allowed network is allowed. Empty (nothing opened) by default."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Allowance:
        """Comma- or space-separated host names, addresses and networks (CIDR); raises
        ValueError naming an entry that is none of them."""
        hosts: set[str] = set()
        networks: list[Network] = []
        for entry in (e for e in re.split(r"[\s,]+", text.strip()) if e):
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            name = entry.lower().rstrip(".")
            if not _HOST_NAME.match(name) or literal_address(name) is not None:
                raise ValueError(f"{entry!r} is neither a host name nor an address or network (e.g. 10.0.0.0/8)")
            hosts.add(name)
        return cls(frozenset(hosts), tuple(dict.fromkeys(networks)))

    def __bool__(self) -> bool:
        return bool(self.hosts or self.networks)

    def permits_host(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.hosts

    def permits(self, address: Address) -> bool:
        return any(
            candidate in network
            for candidate, _ in _carried(address)
            for network in self.networks
            if network.version == candidate.version
        )

    def describe(self) -> list[str]:
        """What each entry opens, for ``memq config`` and the start-up log."""
        out = [f"{n} ({_opened(n)} addresses)" for n in self.networks]
        out += [f"{h} (whatever it resolves to)" for h in sorted(self.hosts)]
        return out


def _opened(network: Network) -> str:
    refused = forbidden(network.network_address)
    return refused.words if refused is not None else "public"


# ---- the resolution seam and the check ---------------------------------------------------


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the operating system's resolver gives for ``host``."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


@dataclass(frozen=True)
class Target:
    """A checked webhook URL: what to connect to (``addresses``, in the resolver's order,
    every one of them allowed) and what to ask for (``host`` in the Host header and TLS's
    server name, ``path`` with its query)."""

    url: str
    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[Address, ...]


def check_syntax(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path) of an absolute http(s) URL; ValidationError otherwise."""
    if len(url) > 2000:
        raise ValidationError("the URL is longer than 2000 characters", field="url")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError as exc:
        raise ValidationError(f"not a valid URL: {exc}", field="url") from None
    if parts.scheme not in _DEFAULT_PORTS:
        raise ValidationError(f"{url[:100]!r}: webhook URLs must use https://", field="url")
    if not host:
        raise ValidationError(f"{url[:100]!r} is not an absolute URL (https://host/path)", field="url")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, host.rstrip(".") or host, port or _DEFAULT_PORTS[parts.scheme], path


@dataclass(frozen=True)
class Destinations:
    """The destination policy with its resolver: ``check`` at registration and before every
    delivery."""

    allowance: Allowance = field(default_factory=Allowance)
    resolver: Resolver | None = None  # None: ``system_resolver``, looked up when called (tests replace it)

    def check(self, url: str) -> Target:
        """The URL's target, every address its host resolves to checked; raises
        ``DestinationRefused`` (naming the rule), ``HostUnresolved`` or ``ValidationError``."""
        scheme, host, port, path = check_syntax(url)
        literal = literal_address(host)
        addresses = (literal,) if literal is not None else self._resolve(url, host, port)
        named = literal is None and self.allowance.permits_host(host)
        for address in addresses:
            if named or self.allowance.permits(address):
                continue
            refused = forbidden(address)
            if refused is not None:
                what = f"{address} is" if literal is not None else f"{host} resolves to {address},"
                article = "an" if refused.words[0] in "aeiou" else "a"
                raise DestinationRefused(url, f"{what} {article} {refused.words} address", refused.rule)
        opened = named or all(self.allowance.permits(a) for a in addresses)
        if scheme != "https" and not opened:
            raise ValidationError(
                f"{url[:100]!r}: webhook URLs must use https:// "
                f"(plain http:// only to destinations {ALLOWANCE_VARIABLE} allows, for development)",
                field="url",
            )
        return Target(url, scheme, host, port, path, addresses)

    def _resolve(self, url: str, host: str, port: int) -> tuple[Address, ...]:
        resolve = self.resolver or system_resolver
        try:
            found = resolve(host, port)
        except (OSError, UnicodeError) as exc:
            raise HostUnresolved(f"the host {host!r} does not resolve ({exc}); check the name") from None
        addresses: dict[Address, None] = {}
        for text in found:
            address = literal_address(text)
            if address is None:  # a resolver answers addresses; anything else is refused
                raise DestinationRefused(url, f"{host} resolved to {text!r}, not an address", "unresolvable")
            addresses[address] = None
        if not addresses:
            raise HostUnresolved(f"the host {host!r} resolves to no address; check the name")
        return tuple(addresses)
