"""Exact constructions that turn convolutions into attention layers and back."""

__all__: list[str] = []
