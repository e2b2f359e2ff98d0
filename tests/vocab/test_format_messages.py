"""Format messages, worded as the apimachinery function each caller mirrors.

Upstream (kubernetes/apimachinery at the spec's commit):
* ``pkg/api/validate/content/errors.go`` ``MaxLenError``: "must be no more than N bytes";
  ``pkg/util/validation/validation.go`` ``MaxLenError``: "... N characters". Both count bytes.
* ``IsDNS1123Label`` (``content/dns.go`` and ``util/validation``): a valid subdomain that is no
  label gets "must not contain dots" instead of the pattern message.
* ``content/kube.go`` ``IsLabelKey`` (``util/validation.IsQualifiedName`` aliases it): more than
  one '/' reads "a valid label key ..."; the name pattern is checked even when the name is empty.
* ``pkg/api/validate/strfmt.go``: ``ShortName``/``LongName``/``LabelKey`` call the content package.
"""

from __future__ import annotations

import typing as t

import pytest

from webhook.declarative import BlockType, validate_block
from webhook.scheduling_objects.blocks import validate_metadata
from webhook.scheduling_objects.declared import validate_struct
from webhook.scheduling_objects.markers import CREATE, Ctx
from webhook.vocab.field import FieldError, FieldPath
from webhook.vocab.formats import FORMAT_CHECKERS, Wording, dns_label, dns_subdomain, label_key
from webhook.vocab.gates import DEFAULT_GATES

BASE = FieldPath.parse("spec.scheduling")
INV = "FieldValueInvalid"

LABEL_PATTERN = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_PATTERN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
QUALIFIED_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
    "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
DOTTED_64 = "a." * 31 + "ab"  # 64 bytes, a valid subdomain

Check = t.Callable[[str], list[str]]
SHORT, LONG, KEY = FORMAT_CHECKERS["k8s-short-name"], FORMAT_CHECKERS["k8s-long-name"], label_key


def _util_label(value: str) -> list[str]:
    return dns_label(value, wording=Wording.UTIL_VALIDATION)


def _util_subdomain(value: str) -> list[str]:
    return dns_subdomain(value, wording=Wording.UTIL_VALIDATION)


@pytest.mark.parametrize(
    ("check", "value", "expected"),
    [
        pytest.param(SHORT, "a.b", ["must not contain dots"], id="short-name-dots"),
        pytest.param(_util_label, "a.b", ["must not contain dots"], id="util-label-dots"),
        pytest.param(SHORT, "a_b", [LABEL_PATTERN], id="short-name-pattern"),
        pytest.param(SHORT, "a..b", [LABEL_PATTERN], id="short-name-not-a-subdomain-either"),
        pytest.param(
            SHORT,
            DOTTED_64,
            ["must be no more than 63 bytes", "must not contain dots"],
            id="short-name-long-dots",
        ),
        pytest.param(
            _util_label,
            DOTTED_64,
            ["must be no more than 63 characters", "must not contain dots"],
            id="util-label-long-dots",
        ),
        pytest.param(
            SHORT, "é" * 32, ["must be no more than 63 bytes", LABEL_PATTERN], id="short-name-counts-bytes"
        ),
        pytest.param(LONG, "a" * 254, ["must be no more than 253 bytes"], id="long-name-length"),
        pytest.param(
            _util_subdomain, "a" * 254, ["must be no more than 253 characters"], id="util-subdomain-length"
        ),
        pytest.param(LONG, "A", [SUBDOMAIN_PATTERN], id="long-name-pattern"),
        pytest.param(
            KEY,
            "a/b/c",
            [
                f"a valid label key {QUALIFIED_RULE} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ],
            id="label-key-two-slashes",
        ),
        pytest.param(KEY, "a" * 64, ["name part must be no more than 63 bytes"], id="label-key-name-length"),
        pytest.param(
            KEY,
            "a" * 254 + "/b",
            ["prefix part must be no more than 253 bytes"],
            id="label-key-prefix-length",
        ),
        pytest.param(KEY, "A/b", [f"prefix part {SUBDOMAIN_PATTERN}"], id="label-key-prefix-pattern"),
        pytest.param(
            KEY,
            "x.io/",
            ["name part must be non-empty", f"name part {QUALIFIED_RULE}"],
            id="label-key-empty-name",
        ),
        pytest.param(
            KEY,
            "/",
            ["prefix part must be non-empty", "name part must be non-empty", f"name part {QUALIFIED_RULE}"],
            id="label-key-empty-both",
        ),
    ],
)
def test_format_messages(check: Check, value: str, expected: list[str]) -> None:
    assert check(value) == expected


def test_bare_dns_checkers_keep_the_object_meta_wording() -> None:
    # blocks.validate_metadata calls them bare: ValidateObjectMeta's name functions
    # (pkg/api/validation/generic.go NameIsDNSSubdomain / NameIsDNSLabel) use util/validation.
    assert dns_subdomain("a" * 254) == ["must be no more than 253 characters"]
    assert dns_label("a" * 64) == ["must be no more than 63 characters"]


def _claim_name(value: str) -> list[FieldError]:
    return validate_block(BlockType.RESOURCE_CLAIM, {"name": value, "resourceClaimTemplateName": "t"}, BASE)


def _template_name(value: str) -> list[FieldError]:
    return validate_struct(
        "WorkloadReference", {"workloadName": "w", "templateName": value}, CREATE, BASE, Ctx(DEFAULT_GATES)
    )


def _metadata_name(value: str) -> list[FieldError]:
    return validate_metadata({"name": value}, CREATE)


@pytest.mark.parametrize(
    ("validate", "value", "expected"),
    [
        pytest.param(
            _claim_name,
            "a.b",
            (INV, "spec.scheduling.name", "a.b", "must not contain dots"),
            id="block-claim-name",
        ),
        pytest.param(
            _template_name,
            "a.b",
            (INV, "spec.scheduling.templateName", "a.b", "must not contain dots"),
            id="workload-ref-template-name",
        ),
        pytest.param(
            _metadata_name,
            "a" * 254,
            (INV, "metadata.name", "a" * 254, "must be no more than 253 characters"),
            id="object-meta-name-keeps-characters",
        ),
    ],
)
def test_messages_at_the_callers(
    validate: t.Callable[[str], list[FieldError]], value: str, expected: tuple[str, str, str, str]
) -> None:
    [err] = validate(value)
    assert (err.type.value, str(err.field), err.bad_value, err.detail) == expected
