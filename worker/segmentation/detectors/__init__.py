"""Boundary detectors behind one interface (episodic_agent's pluggable detectors).

``base`` defines the interface; each detector is a module; ``registry`` maps profile
names to detectors and their parameters.
"""
