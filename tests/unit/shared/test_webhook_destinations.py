"""Where a webhook may be delivered (shared/webhooks/destinations.py): every kind of
non-public address refused, whether the URL names it or a name resolves to it, in each
form it can be written; the development allowance; one lookup per check, and a delivery
that connects to the addresses checked, never looking the name up again."""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memq.shared.errors import ValidationError
from memq.shared.webhooks.destinations import (
    Allowance,
    DestinationRefused,
    Destinations,
    HostUnresolved,
    forbidden,
    literal_address,
)
from memq.shared.webhooks.sending import send

PUBLIC_V4, PUBLIC_V6 = "93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"


def resolving(table: dict[str, list[str]]) -> Destinations:
    """The policy with no allowance and a resolver that answers from ``table``."""

    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return table[host]

    return Destinations(Allowance(), resolve)


# (rule, addresses of that kind in the forms they can take)
FORBIDDEN = {
    "loopback": ["127.0.0.1", "127.8.9.10", "::1"],
    "private": ["10.0.0.7", "172.16.5.4", "172.31.255.255", "192.168.1.1", "fd12:3456::1", "fc00::1", "100.64.0.1"],
    "link-local": ["169.254.169.254", "169.254.0.1", "fe80::1", "fe80::a9fe:a9fe"],
    "multicast": ["224.0.0.1", "239.255.255.250", "ff02::1", "ff05::2"],
    "unspecified": ["0.0.0.0", "::"],
    "reserved": ["240.0.0.1", "255.255.255.255", "192.0.2.10", "198.18.0.1", "2001:db8::1", "0.1.2.3"],
}
CASES = [(rule, address) for rule, addresses in FORBIDDEN.items() for address in addresses]


@pytest.mark.parametrize(("rule", "address"), CASES)
def test_a_name_resolving_to_a_forbidden_address_is_refused_naming_the_rule(rule, address):
    with pytest.raises(DestinationRefused) as refused:
        resolving({"hooks.example.net": [address]}).check("https://hooks.example.net/hook")
    assert refused.value.rule == rule
    assert f"resolves to {ipaddress.ip_address(address)}" in str(refused.value)
    assert "MEMQ_WEBHOOK_ALLOW_DESTINATIONS" in str(refused.value) and refused.value.field == "url"


@pytest.mark.parametrize(("rule", "address"), CASES)
def test_a_url_naming_a_forbidden_address_is_refused(rule, address):
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(DestinationRefused) as refused:
        resolving({}).check(f"https://{host}:8443/x")
    assert refused.value.rule == rule


@pytest.mark.parametrize(
    ("host", "rule"),
    [
        ("2130706433", "loopback"),  # decimal
        ("0x7f000001", "loopback"),  # hex
        ("0177.0.0.1", "loopback"),  # octal
        ("127.1", "loopback"),  # short forms
        ("0x7f.1", "loopback"),
        ("127.0.0.1.", "loopback"),  # a trailing dot
        ("0", "unspecified"),
        ("2852039166", "link-local"),  # 169.254.169.254
        ("0xa9.0xfe.0xa9.0xfe", "link-local"),
        ("012.0.0.1", "private"),  # 10.0.0.1
        ("[::ffff:127.0.0.1]", "loopback"),  # IPv4-mapped IPv6
        ("[::ffff:a9fe:a9fe]", "link-local"),
        ("[::ffff:10.1.2.3]", "private"),
        ("[2002:7f00:1::]", "loopback"),  # 6to4 carrying 127.0.0.1
        ("[2002:a9fe:a9fe::1]", "link-local"),
        ("[64:ff9b::a9fe:a9fe]", "link-local"),  # NAT64 of 169.254.169.254
        ("[64:ff9b::10.0.0.1]", "private"),
        ("[2001:0:4136:e378:8000:63bf:80ff:fffe]", "loopback"),  # Teredo, client 127.0.0.1
        ("[::127.0.0.1]", "loopback"),  # IPv4-compatible
        ("[fe80::1%25eth0]", "link-local"),  # with a zone
    ],
)
def test_every_way_of_writing_an_address_is_judged_by_the_address(host, rule):
    with pytest.raises(DestinationRefused) as refused:
        resolving({}).check(f"https://{host}/hook")
    assert refused.value.rule == rule


def test_a_name_is_refused_when_any_of_its_addresses_is_forbidden_ipv4_or_ipv6():
    for addresses in ([PUBLIC_V4, "10.0.0.1"], ["::1", PUBLIC_V4], [PUBLIC_V6, "fe80::1"]):
        with pytest.raises(DestinationRefused):
            resolving({"mixed.example.net": addresses}).check("https://mixed.example.net/")


def test_a_resolver_that_answers_a_mapped_address_is_judged_by_the_ipv4_it_reaches():
    with pytest.raises(DestinationRefused) as refused:
        resolving({"sneaky.example.net": ["::ffff:169.254.169.254"]}).check("https://sneaky.example.net/")
    assert refused.value.rule == "link-local" and "169.254.169.254" in str(refused.value)


def test_public_addresses_pass_with_everything_the_connection_needs():
    target = resolving({"hooks.example.net": [PUBLIC_V4, PUBLIC_V6, PUBLIC_V4]}).check(
        "https://hooks.example.net:8443/in?x=1"
    )
    assert target.addresses == (ipaddress.ip_address(PUBLIC_V4), ipaddress.ip_address(PUBLIC_V6))
    assert (target.scheme, target.host, target.port, target.path) == ("https", "hooks.example.net", 8443, "/in?x=1")
    assert resolving({}).check(f"https://{PUBLIC_V4}/").addresses == (ipaddress.ip_address(PUBLIC_V4),)


def test_plain_http_is_refused_to_public_hosts_and_allowed_only_where_opened():
    with pytest.raises(ValidationError, match="must use https://"):
        resolving({"hooks.example.net": [PUBLIC_V4]}).check("http://hooks.example.net/")
    for url in ("ftp://example.net/", "example.net/hook", "https://", "https://a:notaport/"):
        with pytest.raises(ValidationError, match="url: "):
            resolving({}).check(url)


def test_a_name_that_does_not_resolve_is_refused_as_such():
    with pytest.raises(HostUnresolved, match="does not resolve"):
        resolving({}).check("https://nowhere.example.net/")
    with pytest.raises(HostUnresolved, match="no address"):
        resolving({"empty.example.net": []}).check("https://empty.example.net/")


def test_the_allowance_opens_named_hosts_and_networks_and_nothing_else():
    allowance = Allowance.parse("127.0.0.1, 10.1.0.0/16 receiver.test")
    table = {"receiver.test": ["192.168.9.9"], "other.test": ["10.1.2.3"], "far.test": ["10.2.0.1"]}
    opened = Destinations(allowance, resolving(table).resolver)
    assert opened.check("http://127.0.0.1:9000/x").addresses == (ipaddress.ip_address("127.0.0.1"),)
    assert opened.check("http://[::ffff:127.0.0.1]:9000/x")  # the IPv4 it reaches is opened
    assert opened.check("http://receiver.test/x").addresses == (ipaddress.ip_address("192.168.9.9"),)
    assert opened.check("http://other.test/x")
    for url in ("http://127.0.0.2/", "http://far.test/", "https://169.254.169.254/", "http://[::1]/"):
        with pytest.raises(DestinationRefused):
            opened.check(url)
    assert not Allowance.parse("") and not Allowance.parse(" , ")
    assert allowance.describe() == [
        "127.0.0.1/32 (loopback addresses)",
        "10.1.0.0/16 (private (RFC 1918) addresses)",
        "receiver.test (whatever it resolves to)",
    ]


@pytest.mark.parametrize("entry", ["-bad", "a b/33", "http://x", "10.0.0.0/33", "x..y"])
def test_an_allowance_entry_that_is_no_host_or_network_is_named(entry):
    with pytest.raises(ValueError, match="neither a host name"):
        Allowance.parse(entry)


def test_the_setting_defaults_to_nothing_opened_and_refuses_a_bad_entry(monkeypatch):
    from memq.shared.settings import Settings

    monkeypatch.delenv("MEMQ_WEBHOOK_ALLOW_DESTINATIONS", raising=False)
    assert not Settings().webhook_allowance
    monkeypatch.setenv("MEMQ_WEBHOOK_ALLOW_DESTINATIONS", "localhost,10.0.0.0/8")
    assert Settings().webhook_allowance == Allowance(frozenset({"localhost"}), (ipaddress.ip_network("10.0.0.0/8"),))
    monkeypatch.setenv("MEMQ_WEBHOOK_ALLOW_DESTINATIONS", "10.0.0.0/99")
    with pytest.raises(ValueError, match=r"10\.0\.0\.0/99"):
        Settings()


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_any_ipv4_address_written_as_one_number_is_that_address(number):
    assert literal_address(str(number)) == ipaddress.IPv4Address(number)
    assert literal_address(hex(number)) == ipaddress.IPv4Address(number)


@given(st.ip_addresses(v=4))
def test_the_verdict_on_an_ipv4_address_is_the_same_through_ipv4_mapped_ipv6(address):
    mapped = ipaddress.IPv6Address(f"::ffff:{address}")
    assert (forbidden(address) is None) == (forbidden(mapped) is None)
    if forbidden(address) is not None:
        assert forbidden(address).rule == forbidden(mapped).rule  # type: ignore[union-attr]


def test_names_are_not_taken_for_addresses():
    for name in ("example.com", "1e100.net", "08.example", "a.1", "0y", "1.2.3.4.5"):
        assert literal_address(name) is None, name


# ---- the connection goes where the check said --------------------------------------------


class _Receiver:
    def __init__(self) -> None:
        self.hosts: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["content-length"]))
                receiver.hosts.append(self.headers["host"])
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    r = _Receiver()
    yield r
    r.server.shutdown()
    r.server.server_close()


def test_each_check_looks_the_name_up_once_and_a_rebinding_is_caught_at_the_next(receiver):
    answers = iter([["127.0.0.1"], ["10.0.0.9"]])
    calls: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return next(answers)

    policy = Destinations(Allowance.parse("127.0.0.1"), rebinding)
    policy.check(f"http://hooks.rebind.test:{receiver.port}/in")
    assert calls == ["hooks.rebind.test"]
    with pytest.raises(DestinationRefused, match=r"10\.0\.0\.9"):
        policy.check(f"http://hooks.rebind.test:{receiver.port}/in")
    assert calls == ["hooks.rebind.test"] * 2


def test_a_delivery_connects_to_the_checked_address_and_never_resolves_again(receiver, monkeypatch):
    target = Destinations(Allowance.parse("127.0.0.1"), lambda host, port: ["127.0.0.1"]).check(
        f"http://hooks.pinned.test:{receiver.port}/in"
    )

    def no_lookup(*args: object, **kwargs: object) -> None:
        raise AssertionError("a delivery must not resolve the name again")

    monkeypatch.setattr(socket, "getaddrinfo", no_lookup)
    attempt = send(target, "s", "episode.created", "ev-1", {"id": "ev-1"}, timeout=5)
    assert attempt.status == 204, attempt.error
    assert receiver.hosts == [f"hooks.pinned.test:{receiver.port}"]  # the Host header still names the host


def test_a_redirect_is_an_answer_not_followed(monkeypatch):
    class Redirect(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(302)
            self.send_header("location", "http://169.254.169.254/latest/meta-data")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        target = Destinations(Allowance.parse("127.0.0.1")).check(f"http://127.0.0.1:{server.server_address[1]}/")
        attempt = send(target, "s", "episode.created", "ev-1", {"id": "ev-1"}, timeout=5)
    finally:
        server.shutdown()
        server.server_close()
    assert attempt.status == 302 and attempt.error == "HTTP 302 Found"
