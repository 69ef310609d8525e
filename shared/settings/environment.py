"""``MEMQ_*`` variables that are set but are no setting: a misspelt name, or one a release
removed, is otherwise ignored without a word (the settings ignore unknown variables, so
that a deployment's environment may hold other programs' variables too).

``unrecognised`` is the pure part: given an environment, what to tell about each such
variable, with the setting probably meant. ``report_unrecognised`` logs that once per
process (every entry point calls it when it starts); ``memq config --check`` prints it
and fails. Only names are reported, never values (a value may be a secret).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from pydantic import AliasChoices
from pydantic.fields import FieldInfo

if TYPE_CHECKING:
    from memq.shared.settings import Settings

PREFIX = "MEMQ_"

# Variables that memq's own tools read beside the settings, or that its documentation uses
# for clients: not settings, and not to be reported. Names, and prefixes ending in "_".
NOT_SETTINGS = (
    "MEMQ_URL",  # the README's and docs' HTTP examples: where the API listens
    "MEMQ_KEY",  # ... and the API key they send
    "MEMQ_SOAK_LOG_LEVEL",  # `memq soak`: its workers' log level
    "MEMQ_EVAL_DATA",  # the lab's `memq eval*` / `memq bench`: the public evaluation data sets
    "MEMQ_PROPERTY_",  # the test suite: how many examples its property tests draw
    "MEMQ_TEST_",  # the test suite: an external Redis Cluster to test against
)

# Settings a release removed: what replaced each.
REMOVED = {
    "MEMQ_EMBEDDING_BATCH_SIZE": "removed: the local model's passes are sized by MEMQ_EMBEDDING_PASS_TOKENS",
    "MEMQ_EMBEDDING_MAX_PADDING": "removed: the local model's passes are sized by MEMQ_EMBEDDING_PASS_TOKENS",
}


class Unrecognised(NamedTuple):
    variable: str
    hint: str  # what it is instead, or the setting probably meant

    def __str__(self) -> str:
        return f"{self.variable}: {self.hint}"


def unrecognised(environ: Mapping[str, str], settings: Iterable[str]) -> list[Unrecognised]:
    """Each ``MEMQ_*`` variable of ``environ`` that is none of ``settings`` (their variable
    names) nor in ``NOT_SETTINGS``, sorted by name, with a hint: the replacement of a
    removed setting, else the closest setting's name when one is close. Names are compared
    in upper case, as the settings read them."""
    known = set(settings)
    out = []
    for name in sorted(environ):
        upper = name.upper()  # the settings read their variables whatever their case
        if not upper.startswith(PREFIX) or upper in known or _not_a_setting(upper):
            continue
        if upper in REMOVED:
            hint = REMOVED[upper]
        else:
            close = difflib.get_close_matches(upper, known, n=1, cutoff=0.8)
            hint = f"not a memq setting; did you mean {close[0]}?" if close else "not a memq setting"
        out.append(Unrecognised(name, hint))
    return out


def _not_a_setting(name: str) -> bool:
    return any(name == n or (n.endswith("_") and name.startswith(n)) for n in NOT_SETTINGS)


def variables_of(name: str, info: FieldInfo) -> tuple[str, ...]:
    """The environment variables a setting is read from, the documented one first."""
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(str(choice) for choice in alias.choices)
    if isinstance(alias, str):
        return (alias,)
    return (PREFIX + name.upper(),)


def setting_variables() -> list[str]:
    """Every variable that sets a setting."""
    from memq.shared.settings import Settings

    return [variable for name, info in Settings.model_fields.items() for variable in variables_of(name, info)]


def invalid_message(errors: Iterable[Mapping[str, object]]) -> str:
    """What to tell about a refused environment, from pydantic's ``errors()`` of the
    settings: one line per error naming the variable (not the field) and what is wrong,
    without the value given (it may be a secret)."""
    from memq.shared.settings import Settings

    lines = []
    for error in errors:
        loc = error.get("loc") or ()
        field = str(loc[0]) if isinstance(loc, tuple) and loc else ""
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        info = Settings.model_fields.get(field)
        lines.append(f"  {variables_of(field, info)[0]}: {message}" if info is not None else f"  {message}")
    return "invalid settings (`memq config` lists each with its allowed values):\n" + "\n".join(lines)


_reported = False


def report_unrecognised(environ: Mapping[str, str]) -> list[Unrecognised]:
    """Log a warning for each unrecognised variable, once per process (later calls only
    return them); call it after logging is configured."""
    global _reported
    found = unrecognised(environ, setting_variables())
    if not _reported:
        _reported = True
        if found:
            import structlog

            log = structlog.get_logger("memq.settings")
            for item in found:
                log.warning("setting_unrecognised", variable=item.variable, hint=item.hint, settings="memq config")
    return found


def openings(settings: Settings) -> list[str]:
    """What these settings open that memq keeps closed by default, one line each (for
    ``memq config`` and the start-up log): today the webhook destinations that are not
    public (``MEMQ_WEBHOOK_ALLOW_DESTINATIONS``)."""
    opened = settings.webhook_allowance.describe()
    if not opened:
        return []
    return ["MEMQ_WEBHOOK_ALLOW_DESTINATIONS lets webhooks reach, also over plain http://: " + "; ".join(opened)]


_opened_reported = False


def report_openings(settings: Settings) -> list[str]:
    """Log ``openings`` once per process as a warning (``setting_opens``); call it after
    logging is configured."""
    global _opened_reported
    found = openings(settings)
    if not _opened_reported:
        _opened_reported = True
        if found:
            import structlog

            log = structlog.get_logger("memq.settings")
            for line in found:
                log.warning("setting_opens", what=line, settings="memq config --check")
    return found
