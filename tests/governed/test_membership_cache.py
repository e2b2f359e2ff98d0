"""The pure identity cache of membership policies: synced or not, the GET fallback and its memory."""

from __future__ import annotations

import pytest

from webhook.governed.membership import NEGATIVE_TTL, IdentityCache, IdentityUnavailable
from webhook.policy.model import Identity

KNOWN = Identity("uid-1", frozenset({"g"}))


class Api:
    """A stand-in for the GET: answers from ``objects``, counts calls, or fails."""

    def __init__(self, objects: dict[str, Identity], *, down: bool = False) -> None:
        self.objects, self.down, self.calls = objects, down, 0

    def __call__(self, namespace: str, name: str) -> Identity | None:
        self.calls += 1
        if self.down:
            raise IdentityUnavailable("API down")
        return self.objects.get(name)


def cache(api: Api | None, now: list[float], *, synced: bool = True) -> IdentityCache:
    out = IdentityCache("Thing", clock=lambda: now[0])
    out.fetch = api
    if synced:
        out.mark_synced()
    return out


def test_before_the_first_list_nothing_absent_is_believed() -> None:
    c = cache(Api({"a": KNOWN}), [0.0], synced=False)
    c.put("ns", "b", KNOWN)
    assert c.identity_of("ns", "b") == KNOWN  # what the watch gave is good already
    with pytest.raises(IdentityUnavailable, match="has not listed Thing objects yet"):
        c.identity_of("ns", "a")


@pytest.mark.parametrize(
    ("objects", "expected", "calls_after_second_lookup"),
    [
        pytest.param({"a": KNOWN}, KNOWN, 1, id="found by the GET, then cached"),
        pytest.param({}, None, 1, id="a 404 is believed for a while"),
    ],
)
def test_a_miss_costs_one_get(objects: dict[str, Identity], expected: Identity | None,
                              calls_after_second_lookup: int) -> None:  # fmt: skip
    api = Api(objects)
    c = cache(api, [0.0])
    assert (c.identity_of("ns", "a"), c.identity_of("ns", "a"), api.calls) == (
        expected,
        expected,
        calls_after_second_lookup,
    )


def test_a_404_is_asked_again_after_its_ttl_or_forgotten_on_added() -> None:
    api, now = Api({}), [0.0]
    c = cache(api, now)
    assert c.identity_of("ns", "a") is None
    now[0] = NEGATIVE_TTL + 0.1
    assert (c.identity_of("ns", "a"), api.calls) == (None, 2)
    c.put("ns", "a", KNOWN)  # the watch's ADDED
    assert (c.identity_of("ns", "a"), api.calls) == (KNOWN, 2)
    c.remove("ns", "a")  # DELETED
    assert c.cached("ns", "a") is None


def test_an_unreachable_api_is_unavailable_and_remembered_as_nothing() -> None:
    api = Api({"a": KNOWN}, down=True)
    c = cache(api, [0.0])
    with pytest.raises(IdentityUnavailable, match="API down"):
        c.identity_of("ns", "a")
    api.down = False
    assert c.identity_of("ns", "a") == KNOWN  # not cached as absent: asked again


def test_without_a_fetch_the_synced_cache_is_the_whole_truth() -> None:
    assert cache(None, [0.0]).identity_of("ns", "a") is None
