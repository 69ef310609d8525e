"""docs/configuration.md and ``memq config`` are generated from the settings class: the page
is current, every setting documented, and the env file of the defaults reads back as them."""

from __future__ import annotations

from pathlib import Path

from memq.configuration import env_file, markdown, settings
from memq.shared.settings import Settings

ROOT = Path(__file__).resolve().parents[3]


def test_the_configuration_page_is_current():
    page = (ROOT / "docs" / "configuration.md").read_text()
    assert page == markdown(), "regenerate it: memq config --format markdown > docs/configuration.md"


def test_every_setting_has_a_variable_a_section_and_a_meaning():
    found = settings()
    assert len(found) == len(Settings.model_fields)
    assert len({s.env for s in found}) == len(found), "two settings share a variable"
    assert not [s.name for s in found if not s.description], "describe every setting in shared/settings/"
    assert {s.env for s in found} >= {"REDIS_URL", "DATABASE_URL", "MEMQ_ENV", "MEMQ_LLM_MODEL"}
    assert len({s.section for s in found}) >= 10 and "general" not in {s.section for s in found}


def test_the_env_file_of_defaults_reads_back_as_the_defaults(monkeypatch):
    for setting in settings():  # whatever this process's environment sets (e.g. the test services)
        monkeypatch.delenv(setting.env, raising=False)
        monkeypatch.delenv("MEMQ_" + setting.name.upper(), raising=False)
    for line in env_file().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            monkeypatch.setenv(name, value)
    assert Settings().model_dump() == Settings.model_construct().model_dump()
