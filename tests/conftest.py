"""Fixtures shared by every test folder."""

from __future__ import annotations

import typing as t

import pytest

from webhook.declarative import reference_engine_only


@pytest.fixture(params=["fast-verdict", "reference-engine-only"])
def structural_engine(request: pytest.FixtureRequest) -> t.Iterator[str]:
    """Runs a test twice: with the structural layer's fast verdict, and with every input taking
    the reference engine, so a test over golden cases shows the shortcut changes no answer."""
    if request.param == "reference-engine-only":
        with reference_engine_only():
            yield request.param
    else:
        yield request.param
