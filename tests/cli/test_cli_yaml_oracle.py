"""PyYAML is the oracle of wasp's two YAML shortcuts (issue 29 item 4, benchmarks/README.md).

* the flat constructor (:mod:`webhook.manifests.constructor`) must give, document for document,
  what ``yaml.safe_load_all`` gives;
* the spans the fork pool cuts a large file into (:func:`webhook.cli.parallel.spans`, at ``---``
  lines) must hold, read one by one, the documents ``yaml.safe_load_all`` reads from the whole.

Random documents, dumped in block and flow style, with the YAML 1.1 scalars that surprise
(``yes``, ``017``, ``1_000``, ``.nan``...) written as plain text, are held against it.
"""

from __future__ import annotations

import typing as t

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_cli_loader import SCALARS, same

from webhook.cli.parallel import spans
from webhook.manifests.loader import LoadError, parse_text

_KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-_.", min_size=1, max_size=8)
_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
)
_VALUES = st.recursive(
    _LEAVES,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_KEYS, children, max_size=4),
    max_leaves=25,
)
# A document is a mapping, as a manifest is (a top-level scalar document cannot be cut safely
# by any tool that cuts at `---` lines, nor is it a manifest).
_DOCUMENTS = st.lists(st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=5), min_size=1, max_size=6)
# Plain text YAML 1.1 resolves: each becomes `key: SCALAR` in a hand-written document.
_RAW = st.lists(st.sampled_from(SCALARS), min_size=1, max_size=8)

_SETTINGS: t.Final = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _text(docs: list[dict[str, object]], flow: bool) -> str:
    return yaml.safe_dump_all(docs, default_flow_style=flow, sort_keys=False, allow_unicode=True)


def _ours(text: str) -> list[object]:
    return [d.obj for d in parse_text("x", text)]


def _agree(text: str) -> None:
    """wasp reads what ``safe_load_all`` reads, and refuses what it refuses."""
    try:
        expected = _pyyamls(text)
    except yaml.YAMLError:
        with pytest.raises(LoadError):
            _ours(text)
        return
    assert same(_ours(text), expected)


def _pyyamls(text: str) -> list[object]:
    """``safe_load_all``'s documents, without the empty ones wasp does not report."""
    return [d for d in yaml.safe_load_all(text) if d is not None]


@_SETTINGS
@given(docs=_DOCUMENTS, flow=st.booleans())
def test_the_flat_constructor_gives_safe_load_alls_documents(
    docs: list[dict[str, object]], flow: bool
) -> None:
    _agree(_text(docs, flow))


@_SETTINGS
@given(scalars=_RAW)
@example(scalars=["yes", "017", "1_000", ".nan", "2026-01-01", "!!binary aGVsbG8="])
def test_plain_yaml_11_scalars_resolve_as_in_safe_load(scalars: list[str]) -> None:
    text = (
        "".join(f"k{i}: {s}\n" for i, s in enumerate(scalars)) + "---\n" + "- " + "\n- ".join(scalars) + "\n"
    )
    _agree(text)


@_SETTINGS
@given(docs=_DOCUMENTS, flow=st.booleans(), target=st.integers(min_value=1, max_value=200))
@example(docs=[{"a": "x\n---\ny"}, {"b": "---"}, {"c": ["--- a", "---"]}], flow=False, target=1)
def test_spans_hold_the_documents_of_the_whole_file(
    docs: list[dict[str, object]], flow: bool, target: int
) -> None:
    text = _text(docs, flow)
    cut = spans(text, target)
    if cut is None:  # nothing to cut at, or a file that must not be cut: read whole
        return
    assert "".join(text[s.start : s.end] for s in cut) == text
    assert same([d for s in cut for d in _pyyamls(text[s.start : s.end])], _pyyamls(text))
