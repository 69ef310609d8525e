"""The per-conversation mailbox in Redis: key names, the wire format of queued
messages, and the Lua scripts that change a conversation's state atomically."""
