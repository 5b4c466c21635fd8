"""Jinja templates of Ascend C (package data). The Python side decides; templates only render."""
