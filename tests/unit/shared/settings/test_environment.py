"""A MEMQ_ variable that is no setting is reported with the setting probably meant, and a
refused environment is told variable by variable, without its values."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from structlog.testing import capture_logs

from memq.shared.errors import ConfigError
from memq.shared.settings import Settings, environment, get_settings, reset_settings
from memq.shared.settings.environment import REMOVED, invalid_message, setting_variables, unrecognised

VARIABLES = setting_variables()


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    """Other tests in the session export service settings; these set their own."""
    import os

    for name in list(os.environ):
        if name.upper().startswith("MEMQ_") or name in ("REDIS_URL", "DATABASE_URL"):
            monkeypatch.delenv(name)
    reset_settings()
    yield
    reset_settings()


def test_every_setting_and_its_aliases_are_recognised():
    assert {"REDIS_URL", "MEMQ_REDIS_URL", "DATABASE_URL", "MEMQ_DATABASE_URL", "MEMQ_RETRIEVAL_LIMIT"} <= set(
        VARIABLES
    )
    assert unrecognised(dict.fromkeys(VARIABLES, "1"), VARIABLES) == []


def test_a_misspelt_setting_is_reported_with_the_one_meant():
    found = unrecognised({"MEMQ_RETRIEVAL_LIMT": "3", "MEMQ_RETRIEVAL_LIMIT": "4", "PATH": "/bin"}, VARIABLES)
    assert [(f.variable, f.hint) for f in found] == [
        ("MEMQ_RETRIEVAL_LIMT", "not a memq setting; did you mean MEMQ_RETRIEVAL_LIMIT?")
    ]
    assert str(found[0]) == "MEMQ_RETRIEVAL_LIMT: not a memq setting; did you mean MEMQ_RETRIEVAL_LIMIT?"


def test_a_name_close_to_none_is_reported_without_a_guess():
    assert [tuple(f) for f in unrecognised({"MEMQ_FLUX_CAPACITOR": "1"}, VARIABLES)] == [
        ("MEMQ_FLUX_CAPACITOR", "not a memq setting")
    ]


def test_a_removed_setting_says_what_replaced_it():
    found = unrecognised(dict.fromkeys(REMOVED, "8"), VARIABLES)
    assert [f.variable for f in found] == sorted(REMOVED)
    assert all("MEMQ_EMBEDDING_PASS_TOKENS" in f.hint for f in found)
    assert not set(REMOVED) & set(VARIABLES), "a removed setting is back: drop it from REMOVED"


def test_variables_memq_reads_beside_the_settings_are_not_reported():
    environ = {
        "MEMQ_URL": "http://127.0.0.1:8765",
        "MEMQ_KEY": "mk_x",
        "MEMQ_SOAK_LOG_LEVEL": "INFO",
        "MEMQ_EVAL_DATA": "/data/eval",
        "MEMQ_PROPERTY_EXAMPLES": "500",
        "MEMQ_TEST_REDIS_CLUSTER_NODES": "3",
    }
    assert unrecognised(environ, VARIABLES) == []
    # a prefix covers its family only, a name only itself
    assert [f.variable for f in unrecognised({"MEMQ_URLS": "x", "MEMQ_TESTING": "1"}, VARIABLES)] == [
        "MEMQ_TESTING",
        "MEMQ_URLS",
    ]


def test_case_is_ignored_as_the_settings_ignore_it(monkeypatch):
    monkeypatch.setenv("memq_retrieval_limit", "7")
    assert Settings().retrieval_limit == 7  # what the settings do ...
    assert unrecognised({"memq_retrieval_limit": "7"}, VARIABLES) == []  # ... so this agrees
    assert [f.variable for f in unrecognised({"Memq_Retrieval_Limt": "7"}, VARIABLES)] == ["Memq_Retrieval_Limt"]


@given(st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,30}", fullmatch=True), st.just("1"), max_size=12))
def test_only_memq_variables_that_set_nothing_are_reported(environ):
    found = {f.variable for f in unrecognised(environ, VARIABLES)}
    for name in environ:
        upper = name.upper()
        expected = (
            upper.startswith("MEMQ_")
            and upper not in VARIABLES
            and upper not in ("MEMQ_URL", "MEMQ_KEY", "MEMQ_SOAK_LOG_LEVEL", "MEMQ_EVAL_DATA")
            and not upper.startswith(("MEMQ_PROPERTY_", "MEMQ_TEST_"))
        )
        assert (name in found) == expected, name


def test_the_process_reports_them_once(monkeypatch):
    monkeypatch.setattr(environment, "_reported", False)
    environ = {"MEMQ_RETRIEVAL_LIMT": "3", "MEMQ_EMBEDDING_BATCH_SIZE": "s3cr3t-value"}
    with capture_logs() as logs:
        first = environment.report_unrecognised(environ)
        again = environment.report_unrecognised(environ)
    assert first == again and len(first) == 2
    assert [(e["event"], e["log_level"], e["variable"]) for e in logs] == [  # the second call logs nothing
        ("setting_unrecognised", "warning", "MEMQ_EMBEDDING_BATCH_SIZE"),
        ("setting_unrecognised", "warning", "MEMQ_RETRIEVAL_LIMT"),
    ]
    assert "MEMQ_RETRIEVAL_LIMIT" in logs[1]["hint"]
    assert "s3cr3t" not in repr(logs), "a variable's value was logged"


def test_a_refused_environment_names_each_variable_without_its_value(monkeypatch):
    monkeypatch.setenv("MEMQ_RETRIEVAL_LIMIT", "s3cr3t")
    monkeypatch.setenv("MEMQ_LOG_FORMAT", "xml")
    with pytest.raises(ValidationError) as info:
        Settings()
    message = invalid_message(info.value.errors())
    assert message.startswith("invalid settings (`memq config` lists each with its allowed values):")
    assert "  MEMQ_RETRIEVAL_LIMIT: Input should be a valid integer" in message
    assert "  MEMQ_LOG_FORMAT: " in message
    assert "s3cr3t" not in message and "retrieval_limit" not in message


def test_the_process_settings_raise_a_config_error(monkeypatch):
    monkeypatch.setenv("MEMQ_TITLE_MIN_WORDS", "50")  # a rule across settings: the model's validator
    with pytest.raises(ConfigError) as info:
        get_settings()
    assert str(info.value).splitlines()[1] == "  MEMQ_TITLE_MIN_WORDS must not exceed MEMQ_TITLE_MAX_WORDS"


def _cli(*args: str, env: dict[str, str]):
    from memq.cli import main

    return CliRunner().invoke(main, list(args), env=env)


def test_config_check_passes_a_clean_environment_and_names_what_is_set():
    result = _cli("config", "--check", env={"MEMQ_RETRIEVAL_LIMIT": "5"})
    assert result.exit_code == 0, result.output
    assert result.output == "ok: the settings are valid; 1 set here (MEMQ_RETRIEVAL_LIMIT)\n"


def test_config_check_fails_on_a_variable_that_sets_nothing():
    result = _cli("config", "--check", env={"MEMQ_RETRIEVAL_LIMT": "5"})
    assert result.exit_code == 1
    assert "error: MEMQ_RETRIEVAL_LIMT: not a memq setting; did you mean MEMQ_RETRIEVAL_LIMIT?" in result.output


def test_config_check_fails_on_an_invalid_value_and_listing_still_works():
    checked = _cli("config", "--check", env={"MEMQ_RETRIEVAL_LIMIT": "many"})
    assert checked.exit_code == 2
    assert "MEMQ_RETRIEVAL_LIMIT: Input should be a valid integer" in checked.output
    assert "Traceback" not in checked.output
    listed = _cli("config", "--format", "env", env={"MEMQ_RETRIEVAL_LIMIT": "many"})
    assert listed.exit_code == 0 and "MEMQ_RETRIEVAL_LIMIT=" in listed.output


def test_another_command_refuses_an_invalid_environment_in_one_clear_line():
    result = _cli("status", env={"MEMQ_RETRIEVAL_LIMIT": "many"})
    assert result.exit_code == 2
    assert result.output.startswith("error: invalid settings")


def test_what_the_webhook_allowance_opens_is_said_by_config_and_logged_once(monkeypatch):
    opened = {"MEMQ_WEBHOOK_ALLOW_DESTINATIONS": "127.0.0.1,receiver.test"}
    checked = _cli("config", "--check", env=opened)
    assert checked.exit_code == 0, checked.output
    assert (
        "note: this environment's MEMQ_WEBHOOK_ALLOW_DESTINATIONS lets webhooks reach, also over plain http://: "
        "127.0.0.1/32 (loopback addresses); receiver.test (whatever it resolves to)"
    ) in checked.output
    reset_settings()
    listed = _cli("config", "--format", "env", env=opened)
    assert "127.0.0.1/32 (loopback addresses)" in listed.output
    reset_settings()
    assert "lets webhooks reach" not in _cli("config", "--check", env={}).output  # nothing opened by default

    monkeypatch.setattr(environment, "_opened_reported", False)
    settings = Settings(webhook_allow_destinations="10.0.0.0/8")
    with capture_logs() as logs:
        environment.report_openings(settings)
        environment.report_openings(settings)
    assert [(e["event"], e["log_level"]) for e in logs] == [("setting_opens", "warning")]
    assert "10.0.0.0/8 (private (RFC 1918) addresses)" in logs[0]["what"]
