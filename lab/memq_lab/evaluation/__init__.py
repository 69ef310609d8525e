"""Offline evaluation helpers: topic-segmentation data loaders and metrics."""
