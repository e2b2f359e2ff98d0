"""Name formats: anchored like Go's regexp (a trailing newline is not a valid name)."""

from __future__ import annotations

import pytest

from webhook.vocab.formats import dns_label, dns_subdomain, label_key, path_segment_name

CASES = [
    ("dns label accepts a plain label", dns_label, "my-name", True),
    ("dns label rejects a trailing newline", dns_label, "abc\n", False),
    ("dns label rejects 64 characters", dns_label, "a" * 64, False),
    ("dns label rejects upper case", dns_label, "Abc", False),
    ("dns subdomain accepts dotted names", dns_subdomain, "a.example.com", True),
    ("dns subdomain rejects a trailing newline", dns_subdomain, "a.b\n", False),
    ("dns subdomain rejects 254 characters", dns_subdomain, "a" * 254, False),
    ("label key accepts a prefixed key", label_key, "topology.kubernetes.io/rack", True),
    ("label key accepts mixed case names", label_key, "My.Name_1", True),
    ("label key rejects a trailing newline", label_key, "rack\n", False),
    ("label key rejects an empty prefix", label_key, "/rack", False),
    ("label key rejects two slashes", label_key, "a/b/c", False),
    ("label key rejects a 64-character name", label_key, "a" * 64, False),
    ("path segment rejects '..'", path_segment_name, "..", False),
    ("path segment rejects '/'", path_segment_name, "a/b", False),
    ("path segment accepts a name", path_segment_name, "Job", True),
]


@pytest.mark.parametrize(("checker", "value", "ok"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_format(checker: object, value: str, ok: bool) -> None:
    assert callable(checker)
    assert (checker(value) == []) is ok
