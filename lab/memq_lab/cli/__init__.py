"""The lab's ``memq`` commands: ``bench``, ``soak``, ``eval``, ``eval-locomo`` and
``eval-longmemeval``. ``memq.cli`` names them (its ``COMMANDS``) and imports each module
here only when the command is used or listed; without the lab installed, each says how to
install it."""
