"""Whatever object a well-formed review carries, both endpoints answer 200 with a verdict:
never a 500, never an InternalError answer (a core exception), never a crashed worker."""

from __future__ import annotations

import typing as t

from apiserver import build_review
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)
block_keys = st.sampled_from(
    [
        "schedulingPolicy",
        "schedulingConstraints",
        "disruptionMode",
        "resourceClaims",
        "basic",
        "gang",
        "minCount",
    ]
)
# Scheduling blocks built from the right keys with arbitrary values reach deep into the core.
blocks = st.recursive(json_values, lambda c: st.dictionaries(block_keys, c, max_size=4), max_leaves=12)
kinds = st.sampled_from(
    [
        ("batch/v1", "Job"),
        ("batch/v1", "CronJob"),
        ("v1", "Pod"),
        ("scheduling.k8s.io/v1beta1", "Workload"),
        ("scheduling.k8s.io/v1beta1", "PodGroup"),
        ("serving.example.com/v1", "InferenceService"),
    ]
)


def obj(kind: tuple[str, str], spec: object, metadata: object) -> dict[str, t.Any]:
    return {"apiVersion": kind[0], "kind": kind[1], "metadata": metadata, "spec": spec}


specs = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"scheduling": blocks},
        optional={
            "parallelism": json_values,
            "template": json_values,
            "jobTemplate": json_values,
            "roles": json_values,
        },
    ),
)
metadatas = st.one_of(
    json_values,
    st.fixed_dictionaries({"name": st.text(max_size=70)}, optional={"ownerReferences": json_values}),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kind=kinds,
    spec=specs,
    metadata=metadatas,
    old_spec=st.one_of(st.none(), specs),
    endpoint=st.sampled_from(["/validate", "/mutate"]),
)
def test_any_object_gets_a_verdict_never_an_internal_error(
    client: FlaskClient,
    kind: tuple[str, str],
    spec: object,
    metadata: object,
    old_spec: object,
    endpoint: str,
) -> None:
    new = obj(kind, spec, metadata)
    old = obj(kind, old_spec, metadata) if old_spec is not None else None
    review = build_review(new, operation="UPDATE" if old is not None else "CREATE", old=old)
    response = client.post(endpoint, json=review)
    assert response.status_code == 200
    answer = response.get_json()["response"]
    assert answer.get("status", {}).get("code") != 500, answer
