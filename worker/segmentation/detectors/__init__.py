"""Boundary detectors behind one interface (seed 004's pluggable detectors).

``base`` defines the interface; each detector is a module; ``registry`` maps profile
names to detectors and their parameters.
"""
