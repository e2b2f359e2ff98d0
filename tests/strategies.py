"""Hypothesis strategies for generated building blocks, shared by the tests that compare a
fast path with the path it stands in for."""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["junk", "scheduling"]

names = st.sampled_from(["gpus", "a", "", "Bad_Name", "x" * 64, "../c"])
policy = st.one_of(
    st.none(),
    st.just({}),
    st.just({"basic": {}}),
    st.builds(
        lambda n: {"gang": {} if n is None else {"minCount": n}}, st.one_of(st.none(), st.integers(-2, 12))
    ),
    st.just({"basic": {}, "gang": {}}),
    st.just({"gang": {"minCount": 2.0}}),
)
claim = st.fixed_dictionaries(
    {"name": names},
    optional={"resourceClaimName": names, "resourceClaimTemplateName": names, "x": st.just(1)},
)
scheduling = st.fixed_dictionaries(
    {},
    optional={
        "schedulingPolicy": policy,
        "schedulingConstraints": st.one_of(
            st.just({"topology": []}),
            st.lists(
                st.fixed_dictionaries(
                    {"key": st.sampled_from(["rack", "", "a/b/c", "topology.kubernetes.io/rack"])}
                ),
                max_size=2,
            ).map(lambda topo: {"topology": topo}),
        ),
        "disruptionMode": st.sampled_from([{}, {"single": {}}, {"all": {}}, {"single": {}, "all": {}}, None]),
        "resourceClaims": st.lists(claim, max_size=5),
    },
)

# Values of the wrong JSON type where blocks and their members go: the paths must agree on
# these too (the structural layer reports them; the compiler's mappers read them as unset).
junk = st.sampled_from(["x", 3, [], [{"gang": {}}], True, {"basic": "x"}, {"gang": 3}, {"single": []}])
