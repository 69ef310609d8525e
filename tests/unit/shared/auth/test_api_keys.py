"""API keys: only a hash is kept, the id part names the key, anything malformed is no key."""

from memq.shared.auth.api_keys import bearer, digest, generate, key_id, matches


def test_a_key_matches_its_hash_and_nothing_else():
    new = generate()
    assert new.key.startswith(f"memq_{new.id}_") and len(new.key) == 5 + 10 + 1 + 43
    assert key_id(new.key) == new.id and matches(new.key, new.hash) and new.hash == digest(new.key)
    other = generate()
    assert not matches(other.key, new.hash) and other.id != new.id
    assert not matches(new.key[:-1] + ("A" if new.key[-1] != "A" else "B"), new.hash)


def test_malformed_keys_have_no_id():
    for bad in (
        "",
        "memq",
        "memq_abc_def",
        "Bearer x",
        "memq_ABCDEFGHIJ_" + "a" * 43,
        "memq_abcdefghij_" + "a" * 42,
        "memq_abcdefghij_" + "a" * 43 + "\n",
        "\x00",
        "é" * 60,
    ):
        assert key_id(bad) is None, bad


def test_bearer_header():
    assert bearer("Bearer abc") == "abc" and bearer("bearer  abc ") == "abc"
    assert bearer("Basic abc") is None and bearer(None) is None and bearer("Bearer") is None and bearer("") is None
