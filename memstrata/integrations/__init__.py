"""Adapters to the frameworks agents already live in (optional extras)."""
