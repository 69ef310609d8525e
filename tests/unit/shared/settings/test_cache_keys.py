"""Settings are mutable, so they are no cache key themselves: what is built from them is
cached by their values (``by_value``). Equal settings share one entry; settings changed
after a lookup are never served what was built from their old values."""

from __future__ import annotations

import pytest

from memq.shared import connections, publisher
from memq.shared.settings import Settings, by_value


def _settings(**values) -> Settings:
    return Settings(_env_file=None, redis_url="redis://one:6379/0", database_url="postgresql://one/db", **values)


def test_settings_are_not_hashable():
    with pytest.raises(TypeError, match="unhashable"):
        hash(_settings())


def test_keys_are_equal_exactly_when_the_values_are():
    a, b = _settings(), _settings()
    assert a is not b
    assert by_value(a) == by_value(b) and hash(by_value(a)) == hash(by_value(b))
    assert by_value(a) != by_value(_settings(retrieval_limit=a.retrieval_limit + 1))
    before = by_value(a)
    a.retrieval_limit += 1
    assert by_value(a) != before


def test_equal_settings_share_one_cache_entry():
    connections.forget_urls()
    a, b = _settings(), _settings()
    assert connections.redis_url(a) == connections.redis_url(b) == "redis://one:6379/0"
    info = connections._redis_url.cache_info()
    assert (info.currsize, info.misses, info.hits) == (1, 1, 1)
    assert publisher.publishing_app(a) is publisher.publishing_app(b)


def test_changed_settings_are_not_served_from_a_stale_entry():
    connections.forget_urls()
    s = _settings()
    assert connections.redis_url(s) == "redis://one:6379/0"
    assert connections.database_url(s) == "postgresql://one/db"
    s.redis_url = "redis://two:6379/0"
    s.database_url = "postgresql://two/db"
    assert connections.redis_url(s) == "redis://two:6379/0"
    assert connections.database_url(s) == "postgresql://two/db"

    app = publisher.publishing_app(s)
    s.key_prefix = "other"
    changed = publisher.publishing_app(s)
    assert changed is not app
    assert changed.conf.broker_url == "redis://two:6379/0"
    assert changed.conf.redbeat_key_prefix == "other:redbeat"
