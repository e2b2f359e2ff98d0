"""``podLabel: {key, value}``: a static child claims the pods whose label has that value, ahead
of a sibling keyed by another label the pod also carries (a RayCluster head pod carries
``ray.io/group=headgroup``, which names no worker group)."""

from __future__ import annotations

from pathlib import Path

import pytest

from webhook.policy import load_policy_file
from webhook.vocab.errors import PolicyError

HEAD = "{id: head, type: leaf, path: spec.head.s, templateName: head, minCountDefault: none, podLabel: LABEL}"
WORKERS = (
    "{id: workers, type: leaf, forEach: spec.groups, itemKey: name, path: s, templateName: '{key}', "
    "minCountDefault: none, podLabel: WORKER_LABEL}"
)
POLICY = f"""\
apiVersion: wasp.dev/v1alpha1
kind: SchedulingIntegration
metadata: {{name: ray}}
spec:
  target: {{group: ray.io, versions: [v1], kind: RayCluster, resource: rayclusters}}
  allowedPolicies: [gang]
  allowedDisruptionModes: [single]
  stamping: {{pods: true}}
  root:
    type: composite
    path: spec.s
    templateName: cluster
    children: [{HEAD}, {WORKERS}]
"""


@pytest.mark.parametrize(
    ("label", "worker_label", "message"),
    [
        pytest.param(
            "{key: ray.io/node-type, value: head}",
            "{key: ray.io/group}",
            None,
            id="a value on a static child",
        ),
        pytest.param(
            "{key: ray.io/node-type}",
            "{key: ray.io/group}",
            r"children\[0\]\.podLabel: podLabel selects an element",
            id="a static child's label without a value",
        ),
        pytest.param(
            "{key: ray.io/node-type, value: head}",
            "{key: ray.io/group, value: g}",
            r"children\[1\]\.podLabel\.value: a node with forEach is chosen by its elements' keys",
            id="a value on a forEach child",
        ),
    ],
)
def test_pod_label_values_are_checked_at_load(
    tmp_path: Path, label: str, worker_label: str, message: str | None
) -> None:
    path = tmp_path / "ray.yaml"
    path.write_text(POLICY.replace("WORKER_LABEL", worker_label).replace("LABEL", label))
    if message is None:
        assert load_policy_file(path).root.children[0].pod_label_value == "head"
    else:
        with pytest.raises(PolicyError, match=message):
            load_policy_file(path)
