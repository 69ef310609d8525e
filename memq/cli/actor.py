"""Who a command acts as in the activity log: ``cli``, and the OS user running it (the
effective user's name; its number when the system has no name for it)."""

from __future__ import annotations

import getpass
import os

from memq.shared.activity import Actor, cli_actor


def os_user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):  # no pwd (Windows), or no entry for the uid (a container's)
        pass
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"


def command_actor() -> Actor:
    return cli_actor(os_user())
