"""Shared pytest configuration: fixtures every suite can use are registered here."""

from __future__ import annotations

pytest_plugins = ["tests.fixtures.apiserver"]
