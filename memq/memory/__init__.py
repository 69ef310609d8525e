"""memq's read side: what an agent asks of its memory, and a tenant's memories carried out
and in. ``Memory`` (memory.py) binds it once; retrieval/, context/ and portability/ hold
the parts it calls."""

from memq.memory.connections import Connections
from memq.memory.memory import Memory

__all__ = ["Connections", "Memory"]
