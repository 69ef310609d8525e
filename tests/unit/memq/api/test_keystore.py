"""The API's key store: keys are checked from memory; an id not known yet is looked up
once, and lookups are rate-limited so guessing keys cannot hammer the database."""


def test_unknown_key_ids_are_looked_up_at_most_so_often():
    from memq.api.keystore import LOOKUPS_PER_SECOND, KeyStore
    from memq.shared.auth.api_keys import generate

    asked: list[str] = []
    known = generate()

    def look_up(kid):
        asked.append(kid)
        return (known.hash, "t1") if kid == known.id else None

    store = KeyStore(dict, 60.0, look_up)
    assert store.tenant_of(known.key) == "t1" and asked == [known.id]  # created a moment ago: found at once
    guesses = [generate().key for _ in range(LOOKUPS_PER_SECOND * 3)]
    assert all(store.tenant_of(g) is None for g in guesses)
    assert len(asked) <= LOOKUPS_PER_SECOND  # the rest refused without asking the database
    assert (
        store.tenant_of(guesses[0]) is None and asked.count(guesses[0].split("_")[1]) <= 1
    )  # an unknown id is remembered
