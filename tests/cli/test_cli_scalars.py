"""Shared scalars of the fast constructor: the values of PyYAML, however often a text repeats."""

from __future__ import annotations

import math

import pytest
import yaml

from webhook.manifests import constructor
from webhook.manifests.loader import parse_text

REPEATS = [
    pytest.param("a: 4\nb: 4\n---\nc: 4\n", id="an integer in two documents"),
    pytest.param("a: yes\nb: True\nc: off\n---\nd: yes\n", id="YAML 1.1 booleans"),
    pytest.param("a: 017\nb: 0x1F\nc: 1_000\nd: 1:30\n---\ne: 017\n", id="octal, hex, sexagesimal"),
    pytest.param("a: ~\nb: null\n---\nc: ~\n", id="nulls"),
    pytest.param("a: 1.5\nb: .inf\nc: -.inf\n---\nd: 1.5\n", id="floats"),
    pytest.param("a: !!int '7'\nb: 7\n---\nc: !!int '7'\n", id="an explicit tag on a quoted scalar"),
]


@pytest.mark.parametrize("text", REPEATS)
def test_repeated_scalars_keep_pyyamls_values(text: str) -> None:
    ours = [d.obj for d in parse_text("f.yaml", text)]
    theirs = list(yaml.safe_load_all(text))
    assert ours == theirs
    assert [[type(v) for v in d.values()] for d in ours] == [[type(v) for v in d.values()] for d in theirs]


def test_nan_keys_are_one_key_as_in_pyyaml() -> None:
    """PyYAML gives every ``.nan`` the same object, so two NaN keys are one (the last wins)."""
    text = "{.nan: a, .NaN: b}\n"
    [doc] = [d.obj for d in parse_text("f.yaml", text)]
    expected = yaml.safe_load(text)
    assert (
        [(math.isnan(k), v) for k, v in doc.items()]
        == [(True, "b")]
        == [(math.isnan(k), v) for k, v in expected.items()]
    )


def test_the_shared_scalars_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(constructor, "_RESOLVE_CACHE_LIMIT", 64)
    monkeypatch.setattr(constructor, "_SCALAR_CACHE", {})
    text = "".join(f"k{i}: {i}\n" for i in range(500))
    [doc] = [d.obj for d in parse_text("f.yaml", text)]
    assert doc == {f"k{i}": i for i in range(500)}
    assert 0 < len(constructor._SCALAR_CACHE) <= 64
