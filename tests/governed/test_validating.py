"""``validate_object`` for Jobs, CronJobs and policy-governed CRDs (issue 3 acceptance).

Tables whose ids are sentences; where a row of the behaviour table in docs/design.md §8
applies, the id starts with its number. Assertions compare ``(type, field)`` tuples and the
result status, never wording (a warning may be checked for the gate it names).
"""

from __future__ import annotations

import copy
import typing as t
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from webhook.declarative import decode
from webhook.declarative import validate as declarative_validate
from webhook.governed.result import Status
from webhook.governed.validation import validate_object
from webhook.policy import PolicySet
from webhook.vocab.errors import PolicyError
from webhook.vocab.field import FieldPath, aggregate
from webhook.vocab.gates import FeatureGates

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_POLICIES = [
    REPO_ROOT / "examples" / "trainer" / "policy.yaml",
    REPO_ROOT / "examples" / "rolebased" / "policy.yaml",
]
POLICIES = PolicySet.load(EXAMPLE_POLICIES)

S = "spec.scheduling"
CJ = "spec.jobTemplate.spec.scheduling"
MIN = f"{S}.schedulingPolicy.gang.minCount"
INVALID = "FieldValueInvalid"
REQUIRED = "FieldValueRequired"
FORBIDDEN = "FieldValueForbidden"
TOO_MANY = "FieldValueTooMany"
DUPLICATE = "FieldValueDuplicate"
TYPE = "FieldValueTypeInvalid"


# --------------------------------------------------------------------------- fluent makers


class Maker:
    """An object under construction; every method returns a new maker (cases share bases)."""

    def __init__(self, doc: dict[str, t.Any]) -> None:
        self.doc = doc

    def set(self, dotted: str, value: object) -> Maker:
        doc = copy.deepcopy(self.doc)
        *parents, last = FieldPath.parse(dotted).segments
        node: t.Any = doc
        for seg in parents:
            node = node.setdefault(seg, {}) if isinstance(seg, str) else node[seg]
        node[last] = copy.deepcopy(value)
        return Maker(doc)

    def drop(self, dotted: str) -> Maker:
        doc = copy.deepcopy(self.doc)
        *parents, last = FieldPath.parse(dotted).segments
        node: t.Any = doc
        for seg in parents:
            node = node[seg]
        del node[last]
        return Maker(doc)

    def scheduling(self, block: object) -> Maker:
        return self.set(self.root, block)

    @property
    def root(self) -> str:
        return CJ if self.doc["kind"] == "CronJob" else S

    def build(self) -> dict[str, t.Any]:
        return copy.deepcopy(self.doc)


_POD = {
    "spec": {"restartPolicy": "Never", "containers": [{"name": "worker", "image": "registry.example/w:1"}]}
}


def job(parallelism: int | None = 4, name: str = "train") -> Maker:
    spec: dict[str, t.Any] = {"template": copy.deepcopy(_POD)}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    return Maker(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "ml"}, "spec": spec}
    )


def cronjob(parallelism: int | None = 4) -> Maker:
    template: dict[str, t.Any] = {"template": copy.deepcopy(_POD)}
    if parallelism is not None:
        template["parallelism"] = parallelism
    spec = {"schedule": "0 2 * * *", "jobTemplate": {"spec": template}}
    return Maker({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"}, "spec": spec})


def isvc(*roles: dict[str, t.Any], scheduling: object = None) -> Maker:
    spec: dict[str, t.Any] = {"roles": list(roles)}
    if scheduling is not None:
        spec["scheduling"] = scheduling
    meta = {"name": "llama", "namespace": "serving"}
    return Maker(
        {"apiVersion": "serving.example.com/v1", "kind": "InferenceService", "metadata": meta, "spec": spec}
    )


def role(name: str, replicas: int = 2, scheduling: object = None) -> dict[str, t.Any]:
    out: dict[str, t.Any] = {"name": name, "replicas": replicas, "template": {"spec": {"containers": []}}}
    if scheduling is not None:
        out["scheduling"] = scheduling
    return out


def gang(min_count: object = None) -> dict[str, t.Any]:
    return {"schedulingPolicy": {"gang": {} if min_count is None else {"minCount": min_count}}}


BASIC = {"schedulingPolicy": {"basic": {}}}
RACK = {"topology": [{"key": "topology.kubernetes.io/rack"}]}
ZONE = {"topology": [{"key": "topology.kubernetes.io/zone"}]}


def claim(name: str = "gpus", target: str = "gpus-a", field: str = "resourceClaimName") -> dict[str, str]:
    return {"name": name, field: target}


SG = "spec.template.spec.schedulingGroup"


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Case:
    """``old`` set means UPDATE. ``status`` defaults to invalid when errors are expected,
    valid otherwise. ``gates`` is an apiserver ``--feature-gates`` string over the defaults.
    ``warnings`` pins the warning count; ``mentions`` must each appear in some warning.
    """

    id: str
    obj: object
    old: object = None
    errors: tuple[tuple[str, str], ...] = ()
    status: Status | None = None
    gates: str = ""
    warnings: int | None = None
    mentions: tuple[str, ...] = ()


def _obj(x: object) -> object:
    return x.build() if isinstance(x, Maker) else x


def case(name: str, obj: object, *errors: tuple[str, str], old: object = None, **kw: t.Any) -> Case:
    return Case(name, _obj(obj), _obj(old), tuple(errors), **kw)


def update_pair(name: str, old: Maker, new: Maker, *errors: tuple[str, str]) -> list[Case]:
    """An update rule: the new object on its own is admitted on create, the change is denied."""
    return [
        case(f"{name}: the new object is admitted on create", new),
        case(f"{name}: denied on update", new, *errors, old=old),
    ]


J = job()
GANG4 = J.scheduling(gang(4))
JOBSET_OWNER = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "name": "js",
    "uid": "u1",
    "controller": True,
}
CRONJOB_OWNER = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "name": "nightly",
    "uid": "u2",
    "controller": True,
}

DECLARATIVE = [
    case(
        "66 a schedulingPolicy with no member is a union error",
        J.scheduling({"schedulingPolicy": {}}),
        (INVALID, f"{S}.schedulingPolicy"),
    ),
    case(
        "66 basic and gang together is a union error",
        J.scheduling({"schedulingPolicy": {"basic": {}, "gang": {}}}),
        (INVALID, f"{S}.schedulingPolicy"),
    ),
    case("67 gang minCount 0 is below the minimum", J.scheduling(gang(0)), (INVALID, MIN)),
    case("67 gang minCount -1 is below the minimum", J.scheduling(gang(-1)), (INVALID, MIN)),
    case(
        "68 two topology entries are too many",
        J.scheduling({"schedulingConstraints": {"topology": RACK["topology"] * 2}}),
        (TOO_MANY, f"{S}.schedulingConstraints.topology"),
    ),
    case(
        "68 an empty topology key is required",
        J.scheduling({"schedulingConstraints": {"topology": [{"key": ""}]}}),
        (REQUIRED, f"{S}.schedulingConstraints.topology[0].key"),
    ),
    case(
        "68 a 254-character topology key is not a label key",
        J.scheduling({"schedulingConstraints": {"topology": [{"key": "k" * 254}]}}),
        (INVALID, f"{S}.schedulingConstraints.topology[0].key"),
    ),
    case(
        "69 a disruptionMode with no member is a union error",
        J.scheduling({"disruptionMode": {}}),
        (INVALID, f"{S}.disruptionMode"),
    ),
    case(
        "70 five resource claims are too many",
        J.scheduling({"resourceClaims": [claim(f"c{i}") for i in range(5)]}),
        (TOO_MANY, f"{S}.resourceClaims"),
    ),
    case(
        "70 a repeated claim name is a duplicate at the second item",
        J.scheduling({"resourceClaims": [claim(), claim(target="gpus-b")]}),
        (DUPLICATE, f"{S}.resourceClaims[1]"),
    ),
    case(
        "70 a claim without a source is a union error at the item",
        J.scheduling({"resourceClaims": [{"name": "gpus"}]}),
        (INVALID, f"{S}.resourceClaims[0]"),
    ),
    case(
        "70 a claim with both sources is a union error at the item",
        J.scheduling({"resourceClaims": [{**claim(), "resourceClaimTemplateName": "tpl"}]}),
        (INVALID, f"{S}.resourceClaims[0]"),
    ),
    case(
        "70 a claim named ../claim is not a DNS label",
        J.scheduling({"resourceClaims": [claim("../claim")]}),
        (INVALID, f"{S}.resourceClaims[0].name"),
    ),
    case(
        "70 an empty claim name is required",
        J.scheduling({"resourceClaims": [claim("")]}),
        (REQUIRED, f"{S}.resourceClaims[0].name"),
    ),
    case(
        "70 a resourceClaimName that is not a DNS subdomain is invalid",
        J.scheduling({"resourceClaims": [claim(target="Bad_Name")]}),
        (INVALID, f"{S}.resourceClaims[0].resourceClaimName"),
    ),
    case(
        "70 a resourceClaimTemplateName that is not a DNS subdomain is invalid",
        J.scheduling({"resourceClaims": [claim(target="-bad", field="resourceClaimTemplateName")]}),
        (INVALID, f"{S}.resourceClaims[0].resourceClaimTemplateName"),
    ),
    case("79 gang minCount 5 exceeds parallelism 4", J.scheduling(gang(5)), (INVALID, MIN)),
    case(
        "a disruption mode all with no schedulingPolicy resolves to basic and is invalid",
        J.scheduling({"disruptionMode": {"all": {}}}),
        (INVALID, f"{S}.disruptionMode"),
    ),
    case(
        "basic with disruption mode all is invalid",
        J.scheduling({**BASIC, "disruptionMode": {"all": {}}}),
        (INVALID, f"{S}.disruptionMode"),
    ),
    case(
        "an unset parallelism counts as 1, so gang minCount 2 is denied",
        job(None).scheduling(gang(2)),
        (INVALID, MIN),
    ),
    case("an unset parallelism counts as 1, so gang minCount 1 is admitted", job(None).scheduling(gang(1))),
]

ADMITTED = [
    case("56 a Job without spec.scheduling is admitted", J),
    case("56 an empty spec.scheduling is admitted", J.scheduling({})),
    case("56 an explicit basic policy is admitted", J.scheduling(BASIC)),
    case("57 gang without minCount is admitted (the controller uses parallelism)", J.scheduling(gang())),
    case(
        "58 gang with topology, disruption all and a claim is admitted",
        J.scheduling(
            {
                **gang(4),
                "schedulingConstraints": RACK,
                "disruptionMode": {"all": {}},
                "resourceClaims": [claim()],
            }
        ),
    ),
    case(
        "gang with disruption mode all is admitted", J.scheduling({**gang(), "disruptionMode": {"all": {}}})
    ),
    case("minCount equal to parallelism is admitted", GANG4),
]

UPDATES = [
    case(
        "72 minCount 4 -> 8 together with parallelism 4 -> 8 is admitted",
        job(8).scheduling(gang(8)),
        old=GANG4,
    ),
    case(
        "72 minCount 4 -> 8 with parallelism left at 4 is denied by the parallelism rule",
        J.scheduling(gang(8)),
        (INVALID, MIN),
        old=GANG4,
    ),
    case("73 minCount 4 -> 0 is below the minimum", J.scheduling(gang(0)), (INVALID, MIN), old=GANG4),
    case(
        "73 an unchanged minCount is not validated again (ratcheting)",
        J.scheduling(gang(2)),
        old=J.scheduling(gang(2)),
    ),
    case(
        "73 an unchanged invalid block is ratcheted whole (minCount 0, both unions broken)",
        J.scheduling({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 0}}, "disruptionMode": {}}),
        old=J.scheduling({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 0}}, "disruptionMode": {}}),
    ),
    case(
        "73 an invalid block that gains only an empty list is ratcheted too (empty is absent)",
        J.scheduling(
            {"schedulingPolicy": {"gang": {"minCount": 0}}, "disruptionMode": {}, "resourceClaims": []}
        ),
        old=J.scheduling({"schedulingPolicy": {"gang": {"minCount": 0}}, "disruptionMode": {}}),
    ),
    case(
        "75 adding an empty resourceClaims list changes nothing (apimachinery's semantic equality)",
        J.scheduling({**gang(4), "resourceClaims": []}),
        old=GANG4,
    ),
    *update_pair("74 adding spec.scheduling", J, GANG4, (INVALID, S)),
    # The compiler refuses a renamed root; the update rules pair nodes by name, so a renamed
    # Job's changed disruption mode is not also reported as immutable.
    case(
        "a renamed Job is an InternalError, not an immutable-field change",
        job(name="other").scheduling({**gang(4), "disruptionMode": {"all": {}}}),
        ("InternalError", S),
        old=GANG4,
    ),
    *update_pair("74 removing spec.scheduling", GANG4, J, (INVALID, S)),
    *update_pair(
        "75 adding schedulingPolicy",
        J.scheduling({"disruptionMode": {"single": {}}}),
        J.scheduling({**gang(4), "disruptionMode": {"single": {}}}),
        (INVALID, f"{S}.schedulingPolicy"),
    ),
    *update_pair(
        "75 removing schedulingPolicy",
        J.scheduling({**gang(4), "disruptionMode": {"single": {}}}),
        J.scheduling({"disruptionMode": {"single": {}}}),
        (INVALID, f"{S}.schedulingPolicy"),
    ),
    *update_pair(
        "76 changing the constraints",
        J.scheduling({**gang(4), "schedulingConstraints": RACK}),
        J.scheduling({**gang(4), "schedulingConstraints": ZONE}),
        (INVALID, f"{S}.schedulingConstraints"),
    ),
    *update_pair(
        "76 adding constraints",
        GANG4,
        J.scheduling({**gang(4), "schedulingConstraints": RACK}),
        (INVALID, f"{S}.schedulingConstraints"),
    ),
    *update_pair(
        "76 removing constraints",
        J.scheduling({**gang(4), "schedulingConstraints": RACK}),
        GANG4,
        (INVALID, f"{S}.schedulingConstraints"),
    ),
    *update_pair(
        "76 changing the disruption mode",
        J.scheduling({**gang(4), "disruptionMode": {"single": {}}}),
        J.scheduling({**gang(4), "disruptionMode": {"all": {}}}),
        (INVALID, f"{S}.disruptionMode"),
    ),
    *update_pair(
        "76 adding a disruption mode",
        GANG4,
        J.scheduling({**gang(4), "disruptionMode": {"all": {}}}),
        (INVALID, f"{S}.disruptionMode"),
    ),
    *update_pair(
        "76 removing the disruption mode",
        J.scheduling({**gang(4), "disruptionMode": {"all": {}}}),
        GANG4,
        (INVALID, f"{S}.disruptionMode"),
    ),
    *update_pair(
        "77 adding a claim",
        J.scheduling({"resourceClaims": [claim()]}),
        J.scheduling({"resourceClaims": [claim(), claim("cache", "cache-a")]}),
        (INVALID, f"{S}.resourceClaims"),
    ),
    *update_pair(
        "77 removing a claim",
        J.scheduling({"resourceClaims": [claim(), claim("cache", "cache-a")]}),
        J.scheduling({"resourceClaims": [claim()]}),
        (INVALID, f"{S}.resourceClaims"),
    ),
    *update_pair(
        "77 retargeting a claim",
        J.scheduling({"resourceClaims": [claim()]}),
        J.scheduling({"resourceClaims": [claim(target="gpus-b")]}),
        (INVALID, f"{S}.resourceClaims"),
    ),
    *update_pair(
        "80 switching basic -> gang on a Job", J.scheduling(BASIC), GANG4, (INVALID, f"{S}.schedulingPolicy")
    ),
    *update_pair(
        "80 switching gang -> basic on a Job", GANG4, J.scheduling(BASIC), (INVALID, f"{S}.schedulingPolicy")
    ),
    case(
        "an unchanged Job is admitted on update",
        J.scheduling({**gang(4), "schedulingConstraints": RACK}),
        old=J.scheduling({**gang(4), "schedulingConstraints": RACK}),
    ),
    case(
        "null members equal absent ones on update",
        J.scheduling({**gang(4), "disruptionMode": None}),
        old=GANG4,
    ),
    # A block without a policy still has its other members compared.
    case(
        "76 changing the disruption mode of a block without a policy",
        J.scheduling({"disruptionMode": {"all": {}}}),
        (INVALID, f"{S}.disruptionMode"),  # basic (the unset policy) with all
        (INVALID, f"{S}.disruptionMode"),  # immutable
        old=J.scheduling({"disruptionMode": {"single": {}}}),
    ),
    *update_pair(
        "80 switching basic -> gang with a null basic member",
        J.scheduling(BASIC),
        J.scheduling({"schedulingPolicy": {"basic": None, "gang": {}}}),
        (INVALID, f"{S}.schedulingPolicy"),
    ),
]

ELASTIC = [
    case(
        "elastic: raising minCount and parallelism together is admitted",
        job(6).scheduling(gang(6)),
        old=GANG4,
    ),
    case(
        "elastic: raising minCount alone past parallelism is denied at minCount",
        J.scheduling(gang(6)),
        (INVALID, MIN),
        old=GANG4,
    ),
    case(
        "elastic: lowering parallelism below minCount is denied at minCount",
        job(2).scheduling(gang(4)),
        (INVALID, MIN),
        old=GANG4,
    ),
    case(
        "elastic: lowering minCount and parallelism together is admitted",
        job(2).scheduling(gang(2)),
        old=GANG4,
    ),
    case("decision 11: clearing minCount on update is admitted", J.scheduling(gang()), old=GANG4),
    case(
        "decision 11: setting minCount on a gang that had none is admitted", GANG4, old=J.scheduling(gang())
    ),
]

DECISIONS = [
    case(
        "decision 10: parallelism 0 with minCount set is admitted with a warning",
        job(0).scheduling(gang(4)),
        warnings=1,
    ),
    case(
        "decision 10: parallelism 0 with gang and no minCount is admitted without a warning",
        job(0).scheduling(gang()),
        warnings=0,
    ),
    case(
        "decision 3: spec.scheduling with a pod schedulingGroup is forbidden on create",
        GANG4.set(SG, {"podGroupName": "pg"}),
        (FORBIDDEN, S),
    ),
    case(
        "decision 3: an update is admitted when the old Job had both",
        job(4).scheduling(gang(2)).set(SG, {"podGroupName": "pg"}),
        old=GANG4.set(SG, {"podGroupName": "pg"}),
    ),
    case(
        "decision 3: adding a schedulingGroup next to spec.scheduling on update is forbidden",
        GANG4.set(SG, {"podGroupName": "pg"}),
        (FORBIDDEN, S),
        old=GANG4,
    ),
    case(
        "decision 3: a schedulingGroup without spec.scheduling is not wasp's business",
        J.set(SG, {"podGroupName": "pg"}),
    ),
    case(
        "decision 8: a 58-character Job name is admitted with a warning",
        job(name="j" * 58).scheduling(gang()),
        warnings=1,
        mentions=("j" * 58 + "-pgt-0",),
    ),
    case(
        "decision 8: a 57-character Job name is admitted without a warning",
        job(name="j" * 57).scheduling(gang()),
        warnings=0,
    ),
    case(
        "decision 8: no template-name warning when the pods join a user-managed PodGroup (no Workload)",
        job(name="j" * 58).set(SG, {"podGroupName": "pg"}),
        warnings=0,
    ),
    case(
        "decision 8: no template-name warning for a Job another controller owns (no Workload of its own)",
        job(name="j" * 58).set("metadata.ownerReferences", [JOBSET_OWNER]),
        warnings=0,
    ),
    case(
        "decision 4: no template-name warning for a Job a CronJob owns (the Job controller makes no Workload)",
        job(name="j" * 58).set("metadata.ownerReferences", [CRONJOB_OWNER]),
        warnings=0,
    ),
    case(
        "decision 4: no template-name warning for a CronJob, only the notice that its Jobs may get no Workload",
        cronjob().set("metadata.name", "c" * 50).scheduling(gang(4)),
        warnings=1,
        mentions=("getManagementMode",),
    ),
    case("decision 4: a CronJob without blocks gets no notice", cronjob(), warnings=0),
    case(
        "decision 8: no template-name warning while GenericWorkload is off (no Workload at all)",
        job(name="j" * 58),
        gates="GenericWorkload=false",
        warnings=0,
    ),
]

GATES = [
    case(
        "decision 14: WorkloadWithJob off drops spec.scheduling on create with a warning and no errors",
        J.scheduling(gang(0)),
        gates="WorkloadWithJob=false",
        warnings=1,
        mentions=("WorkloadWithJob",),
    ),
    case(
        "71 WorkloadWithJob off and a kept spec.scheduling that changes is forbidden",
        J.scheduling(gang(2)),
        (FORBIDDEN, S),
        old=GANG4,
        gates="WorkloadWithJob=false",
        mentions=("WorkloadWithJob",),
    ),
    case(
        "71 WorkloadWithJob off and a kept spec.scheduling that is unchanged is admitted (ratcheting)",
        GANG4,
        old=GANG4,
        gates="WorkloadWithJob=false",
    ),
    case(
        "decision 14: WorkloadWithJob off leaves Jobs without spec.scheduling alone",
        J,
        gates="WorkloadWithJob=false",
        warnings=0,
    ),
    case(
        "decision 14: TopologyAwareWorkloadScheduling off warns that the constraints are dropped",
        J.scheduling({**gang(4), "schedulingConstraints": RACK}),
        gates="TopologyAwareWorkloadScheduling=false",
        warnings=1,
        mentions=("TopologyAwareWorkloadScheduling",),
    ),
    case(
        "decision 14: DRAWorkloadResourceClaims off warns that the claims are dropped",
        J.scheduling({"resourceClaims": [claim()]}),
        gates="DRAWorkloadResourceClaims=false",
        warnings=1,
        mentions=("DRAWorkloadResourceClaims",),
    ),
    case(
        "decision 14: GenericWorkload off warns that no Workload is created",
        GANG4,
        gates="GenericWorkload=false",
        mentions=("GenericWorkload",),
    ),
    case(
        "decision 14: WorkloadWithJob off drops a CronJob's job-template scheduling with a warning",
        cronjob().scheduling(gang(0)),
        gates="WorkloadWithJob=false",
        warnings=1,
        mentions=("WorkloadWithJob",),
    ),
]

C = cronjob()
CMIN = f"{CJ}.schedulingPolicy.gang.minCount"
CRONJOB = [
    case(
        "66 a CronJob's paths carry the spec.jobTemplate. prefix",
        C.scheduling({"schedulingPolicy": {}}),
        (INVALID, f"{CJ}.schedulingPolicy"),
    ),
    case("67 a CronJob job template with minCount 0 is invalid", C.scheduling(gang(0)), (INVALID, CMIN)),
    case(
        "70 a CronJob job template with five claims has too many",
        C.scheduling({"resourceClaims": [claim(f"c{i}") for i in range(5)]}),
        (TOO_MANY, f"{CJ}.resourceClaims"),
    ),
    case(
        "decision 1: a CronJob minCount above its template's parallelism is invalid",
        C.scheduling(gang(5)),
        (INVALID, CMIN),
    ),
    case(
        "decision 1: a CronJob minCount equal to its template's parallelism is admitted",
        C.scheduling(gang(4)),
    ),
    case(
        "decision 1: a CronJob template without parallelism counts as 1",
        cronjob(None).scheduling(gang(2)),
        (INVALID, CMIN),
    ),
    case(
        "a CronJob job template with basic and all is invalid",
        C.scheduling({"disruptionMode": {"all": {}}}),
        (INVALID, f"{CJ}.disruptionMode"),
    ),
    case(
        "decision 3: a CronJob template with scheduling and a pod schedulingGroup is forbidden",
        C.scheduling(gang(4)).set(f"spec.jobTemplate.{SG}", {"podGroupName": "pg"}),
        (FORBIDDEN, CJ),
    ),
    case(
        "78 a CronJob job template may switch basic -> gang", C.scheduling(gang(4)), old=C.scheduling(BASIC)
    ),
    case(
        "78 a CronJob job template may switch gang -> basic", C.scheduling(BASIC), old=C.scheduling(gang(4))
    ),
    case("decision 12: a CronJob job template may add spec.scheduling", C.scheduling(gang(4)), old=C),
    case(
        "decision 12: a CronJob job template may change its constraints",
        C.scheduling({"schedulingConstraints": ZONE}),
        old=C.scheduling({"schedulingConstraints": RACK}),
    ),
    case(
        "decision 12: a CronJob job template may change its claims",
        C.scheduling({"resourceClaims": [claim(target="b")]}),
        old=C.scheduling({"resourceClaims": [claim()]}),
    ),
    case(
        "decision 12: structural rules still apply to the new job template",
        C.scheduling(gang(0)),
        (INVALID, CMIN),
        old=C.scheduling(gang(4)),
    ),
]

WORKLOAD = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "Workload",
    "metadata": {"name": "wl", "namespace": "ml"},
}


def workload(*templates: dict[str, t.Any]) -> dict[str, t.Any]:
    return {**WORKLOAD, "spec": {"podGroupTemplates": list(templates)}}


def template(name: str, min_count: int = 2) -> dict[str, t.Any]:
    return {"name": name, "schedulingPolicy": {"gang": {"minCount": min_count}}}


SCHEDULING_API = [
    case(
        "81 a Workload template named Invalid_Name is invalid",
        workload(template("Invalid_Name")),
        (INVALID, "spec.podGroupTemplates[0].name"),
    ),
    case(
        "81 a repeated Workload template name is a duplicate",
        workload(template("a"), template("a")),
        (DUPLICATE, "spec.podGroupTemplates[1]"),
    ),
    case(
        "81 a Workload template with gang minCount 0 is required (non-pointer)",
        workload(template("a", 0)),
        (REQUIRED, "spec.podGroupTemplates[0].schedulingPolicy.gang.minCount"),
    ),
    case(
        "81 nine Workload templates are too many",
        workload(*(template(f"t{i}") for i in range(9))),
        (TOO_MANY, "spec.podGroupTemplates"),
    ),
]

FLOW = [
    case(
        "a kind no policy governs is skipped",
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
        status=Status.SKIPPED,
    ),
    case(
        "a Deployment is skipped",
        {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"scheduling": "x"}},
        status=Status.SKIPPED,
    ),
    case(
        "a governed kind at a version its policy does not list is skipped",
        {
            "apiVersion": "ml.example.com/v2",
            "kind": "Trainer",
            "spec": {"scheduling": {"schedulingPolicy": {}}},
        },
        status=Status.SKIPPED,
    ),
    case("a list is not an object", [J.build()], status=Status.ERROR),
    case("a string is not an object", "kind: Job", status=Status.ERROR),
    case("None is not an object", None, status=Status.ERROR),
    case("a mapping without apiVersion and kind is not an object", {"spec": {}}, status=Status.ERROR),
    case(
        "a non-string kind is not an object", {"apiVersion": "batch/v1", "kind": ["Job"]}, status=Status.ERROR
    ),
]

R2 = role("prefill", 2, gang(2))
R4 = role("decode", 4, gang(4))
MALFORMED = [
    case("malformed: spec is not a mapping", {**J.build(), "spec": "parallelism: 4"}, (TYPE, "spec")),
    case("malformed: spec is a list", {**J.build(), "spec": [1, 2]}, (TYPE, "spec")),
    case("malformed: metadata is not a mapping", {**GANG4.build(), "metadata": "train"}),
    case("malformed: spec.scheduling is the string gang", J.scheduling("gang"), (TYPE, S)),
    case("malformed: spec.scheduling is a list", J.scheduling([gang(4)]), (TYPE, S)),
    case(
        "malformed: null blocks read as absent on create",
        J.scheduling(
            {
                "schedulingPolicy": None,
                "schedulingConstraints": None,
                "disruptionMode": None,
                "resourceClaims": None,
            }
        ),
    ),
    case(
        "malformed: a null schedulingPolicy clears it on update",
        J.scheduling({"schedulingPolicy": None}),
        (INVALID, f"{S}.schedulingPolicy"),
        old=GANG4,
    ),
    case(
        "malformed: a null gang leaves the policy union empty",
        J.scheduling({"schedulingPolicy": {"gang": None}}),
        (INVALID, f"{S}.schedulingPolicy"),
    ),
    case("malformed: minCount is the string 3", J.scheduling(gang("3")), (TYPE, MIN)),
    case("malformed: minCount is a boolean", J.scheduling(gang(True)), (TYPE, MIN)),
    case("malformed: minCount is a float", J.scheduling(gang(2.5)), (TYPE, MIN)),
    case(
        "malformed: schedulingPolicy is a string",
        J.scheduling({"schedulingPolicy": "gang"}),
        (TYPE, f"{S}.schedulingPolicy"),
    ),
    case(
        "malformed: resourceClaims is a mapping",
        J.scheduling({"resourceClaims": {"gpus": "a"}}),
        (TYPE, f"{S}.resourceClaims"),
    ),
    case(
        "malformed: a claim is a string",
        J.scheduling({"resourceClaims": ["gpus"]}),
        (TYPE, f"{S}.resourceClaims[0]"),
    ),
    case(
        "malformed: parallelism is the string 8",
        J.set("spec.parallelism", "8").scheduling(gang(3)),
        (TYPE, "spec.parallelism"),
    ),
    case(
        "malformed: unknown fields inside blocks are forbidden",
        J.scheduling(
            {
                "schedulingPolicy": {"gang": {"minCount": 2, "maxCount": 4}},
                "priority": 1,
                "disruptionMode": {"single": {}, "partial": {}},
            }
        ),
        (FORBIDDEN, f"{S}.schedulingPolicy.gang.maxCount"),
        (FORBIDDEN, f"{S}.priority"),
        (FORBIDDEN, f"{S}.disruptionMode.partial"),
    ),
    case("malformed: roles is not a list", isvc().set("spec.roles", {"prefill": R2}), (TYPE, "spec.roles")),
    case("malformed: a role that is not a mapping", isvc(R2, R4, "router"), (TYPE, "spec.roles[2]")),  # type: ignore[arg-type]
    case(
        "malformed: a role without a name",
        isvc({k: v for k, v in R2.items() if k != "name"}, R4),
        (REQUIRED, "spec.roles[0].name"),
    ),
    case(
        "malformed: a role whose name is not a string",
        isvc({**R2, "name": 7}, R4),
        (REQUIRED, "spec.roles[0].name"),
    ),
    case(
        "malformed: a role's scheduling is a string",
        isvc({**R2, "scheduling": "gang"}, R4),
        (TYPE, "spec.roles[0].scheduling"),
    ),
    case(
        "malformed: replicas is a string", isvc({**R2, "replicas": "2"}, R4), (TYPE, "spec.roles[0].replicas")
    ),
]

COMPOSITE_GATE_WARNING = ("CompositePodGroup",)
ROLEBASED = [
    case(
        "rolebased: a gang of gangs is admitted, with a warning naming the CompositePodGroup gate",
        isvc(R2, R4, scheduling={"schedulingPolicy": {"gang": {"minGroupCount": 2}}}),
        warnings=1,
        mentions=COMPOSITE_GATE_WARNING,
    ),
    case(
        "rolebased: roles without any block are admitted without the CompositePodGroup warning",
        isvc(role("prefill", 2), role("decode", 4)),
        warnings=0,
    ),
    case(
        "rolebased: a block on one role alone still draws the CompositePodGroup warning",
        isvc(R2, role("decode", 4)),
        warnings=1,
        mentions=COMPOSITE_GATE_WARNING,
    ),
    case(
        "rolebased: a role's minCount may not exceed its replicas",
        isvc(role("prefill", 1, gang(2)), R4),
        (INVALID, "spec.roles[0].scheduling.schedulingPolicy.gang.minCount"),
    ),
    case(
        "rolebased: a role without replicas counts as 1",
        isvc({k: v for k, v in R2.items() if k != "replicas"}),
        (INVALID, "spec.roles[0].scheduling.schedulingPolicy.gang.minCount"),
    ),
    case(
        "rolebased: an empty roles list leaves the composite without groups", isvc(), (REQUIRED, "spec.roles")
    ),
    case(
        "rolebased: a missing roles list leaves the composite without groups",
        isvc().drop("spec.roles"),
        (REQUIRED, "spec.roles"),
    ),
    case(
        "rolebased: two roles with one name are duplicates",
        isvc(R2, {**R4, "name": "prefill"}),
        (DUPLICATE, "spec.roles[1]"),
    ),
    case(
        "rolebased: nine roles are too many for one template list",
        isvc(*(role(f"r{i}", 1) for i in range(9))),
        (TOO_MANY, "spec.roles"),
    ),
    case(
        "rolebased: composite minGroupCount 0 is below the minimum",
        isvc(R2, scheduling={"schedulingPolicy": {"gang": {"minGroupCount": 0}}}),
        (INVALID, "spec.scheduling.schedulingPolicy.gang.minGroupCount"),
    ),
    case(
        "rolebased: a composite has no resource-claim block",
        isvc(R2, scheduling={"resourceClaims": [claim()]}),
        (FORBIDDEN, "spec.scheduling.resourceClaims"),
    ),
    case(
        "rolebased: composite basic with disruption all is invalid",
        isvc(R2, scheduling={**BASIC, "disruptionMode": {"all": {}}}),
        (INVALID, "spec.scheduling.disruptionMode"),
    ),
    case(
        "rolebased: errors in several roles are all reported",
        isvc(role("prefill", 2, gang(0)), role("decode", 4, {"disruptionMode": {}})),
        (INVALID, "spec.roles[0].scheduling.schedulingPolicy.gang.minCount"),
        (INVALID, "spec.roles[1].scheduling.disruptionMode"),
    ),
    case(
        "rolebased (immutable): adding a role is forbidden at the new item",
        isvc(R2, R4, role("router", 1)),
        (FORBIDDEN, "spec.roles[2]"),
        old=isvc(R2, R4),
    ),
    case(
        "rolebased (immutable): removing a role is forbidden at the list",
        isvc(R2),
        (FORBIDDEN, "spec.roles"),
        old=isvc(R2, R4),
    ),
    case(
        "rolebased (immutable): a role's scheduling block is frozen",
        isvc(role("prefill", 2, gang(1)), R4),
        (INVALID, "spec.roles[0].scheduling"),
        old=isvc(R2, R4),
    ),
    case(
        "rolebased (immutable): the composite block is frozen",
        isvc(R2, scheduling=BASIC),
        (INVALID, "spec.scheduling"),
        old=isvc(R2),
    ),
    case(
        "rolebased (immutable): replicas may change while the gang still fits",
        isvc(role("prefill", 5, gang(2)), R4),
        old=isvc(R2, R4),
    ),
    case("rolebased (immutable): reordering roles is not a change", isvc(R4, R2), old=isvc(R2, R4)),
    case(
        "decision 14: composite constraints are not gated by TopologyAwareWorkloadScheduling",
        isvc(R2, scheduling={"schedulingConstraints": ZONE}),
        gates="TopologyAwareWorkloadScheduling=false,CompositePodGroup=true",
        warnings=0,
    ),
    case(
        "decision 14: a role's constraints are dropped with TopologyAwareWorkloadScheduling off",
        isvc({**R2, "scheduling": {"schedulingConstraints": ZONE}}),
        gates="TopologyAwareWorkloadScheduling=false,CompositePodGroup=true",
        warnings=1,
        mentions=("TopologyAwareWorkloadScheduling",),
    ),
    case(
        "decision 14: no CompositePodGroup warning when that gate is on",
        isvc(R2, scheduling={"schedulingPolicy": {"gang": {"minGroupCount": 1}}}),
        gates="CompositePodGroup=true",
        warnings=0,
    ),
]

T = Maker(
    {
        "apiVersion": "ml.example.com/v1",
        "kind": "Trainer",
        "metadata": {"name": "resnet"},
        "spec": {"workers": 8, "template": copy.deepcopy(_POD)},
    }
)
TRAINER = [
    case("trainer: a gang of all workers is admitted", T.scheduling(gang(8))),
    case("trainer: minCount may not exceed spec.workers", T.scheduling(gang(9)), (INVALID, MIN)),
    case(
        "trainer: an unset spec.workers counts as 1",
        T.drop("spec.workers").scheduling(gang(2)),
        (INVALID, MIN),
    ),
    case(
        "trainer (elastic): workers and minCount may grow together",
        T.set("spec.workers", 12).scheduling(gang(12)),
        old=T.scheduling(gang(8)),
    ),
    case(
        "trainer (elastic): the variant is frozen",
        T.scheduling(BASIC),
        (INVALID, f"{S}.schedulingPolicy"),
        old=T.scheduling(gang(8)),
    ),
]

TABLE = [
    *DECLARATIVE, *ADMITTED, *UPDATES, *ELASTIC, *DECISIONS, *GATES, *CRONJOB, *SCHEDULING_API, *FLOW, *MALFORMED,
    *ROLEBASED, *TRAINER,
]  # fmt: skip


@pytest.mark.parametrize("c", TABLE, ids=[c.id for c in TABLE])
def test_validate_object(c: Case) -> None:
    policies = PolicySet(POLICIES.policies, gates=FeatureGates.parse(c.gates)) if c.gates else POLICIES
    before = copy.deepcopy((c.obj, c.old))
    result = validate_object(c.obj, c.old, policies=policies)
    assert sorted(e.key() for e in result.errors) == sorted(c.errors)
    assert result.status is (c.status or (Status.INVALID if c.errors else Status.VALID))
    if c.warnings is not None:
        assert len(result.warnings) == c.warnings, result.warnings
    for mention in c.mentions:
        assert any(mention in w for w in result.warnings), (mention, result.warnings)
    assert (c.obj, c.old) == before  # never modified


def test_table_ids_are_unique() -> None:
    assert len({c.id for c in TABLE}) == len(TABLE)


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many values the structural layer decodes (calls of ``normalize``, recursion included):
    the work a review costs, counted instead of timed."""
    calls = [0]
    original = decode.normalize

    def counting(value: object, scan: decode.Scan, levels: int) -> object:
        calls[0] += 1
        return original(value, scan, levels)

    monkeypatch.setattr(decode, "normalize", counting)  # the recursion looks the name up here
    monkeypatch.setattr(declarative_validate, "normalize", counting)
    return calls


def test_ten_thousand_claims_are_too_many_and_no_claim_is_decoded(decoded: list[int]) -> None:
    obj = J.scheduling({"resourceClaims": [claim(f"c{i}", f"t{i}") for i in range(10_000)]}).build()
    result = validate_object(obj, policies=POLICIES)
    assert [e.key() for e in result.errors] == [(TOO_MANY, f"{S}.resourceClaims")]
    # maxItems short-circuits before decoding: the list is one TooMany, its items cost nothing.
    assert 0 < decoded[0] < 20


def test_ten_thousand_claims_on_update_cost_work_linear_in_the_claims(decoded: list[int]) -> None:
    claims = [claim(f"c{i}", f"t{i}") for i in range(10_000)]
    old = J.scheduling({"resourceClaims": claims}).build()
    new = J.scheduling({"resourceClaims": [*claims, claim("extra")]}).build()
    result = validate_object(new, old, policies=POLICIES)
    assert (TOO_MANY, f"{S}.resourceClaims") in [e.key() for e in result.errors]
    # Ratcheting decodes both lists once (old and new are compared whole), a few values per claim;
    # nothing is done per pair of claims.
    assert decoded[0] < 10 * (len(claims) + 1)


def test_validation_never_raises_on_deeply_nested_input() -> None:
    deep: object = {}
    for _ in range(5_000):
        deep = {"gang": deep}
    obj = J.build()
    obj["spec"]["scheduling"] = {"schedulingPolicy": deep}  # built in place: too deep to copy
    result = validate_object(obj, policies=POLICIES)
    assert result.status is Status.INVALID


def _deep(levels: int) -> dict[str, t.Any]:
    value: dict[str, t.Any] = {}
    for _ in range(levels):
        value = {"gang": value}
    return value


def _job_with(block: object) -> dict[str, t.Any]:
    doc = J.build()
    doc["spec"]["scheduling"] = block  # built in place: too deep to copy
    return doc


def _isvc_with(block: object) -> dict[str, t.Any]:
    doc = isvc(role("prefill")).build()
    doc["spec"]["roles"][0]["scheduling"] = block
    return doc


@pytest.mark.parametrize(
    ("make", "where"),
    [
        pytest.param(_job_with, "spec.scheduling", id="job-elastic-rules"),
        pytest.param(_isvc_with, "spec.roles[0]", id="isvc"),
    ],
)
def test_an_update_of_a_block_too_deep_to_compare_is_denied_not_raised(
    make: t.Callable[[object], dict[str, t.Any]], where: str
) -> None:
    # Two separately decoded copies, 1,100 levels deep (orjson accepts 1,024 for a whole
    # review): comparing them exceeds Python's recursion limit, so they count as changed,
    # and the denial quoting the value still renders.
    new, old = make({"schedulingPolicy": _deep(1_100)}), make({"schedulingPolicy": _deep(1_100)})
    result = validate_object(new, old, policies=POLICIES)
    assert result.status is Status.INVALID
    assert all(e.path.startswith(where) for e in result.errors)
    assert aggregate(list(result.errors))


# --------------------------------------------------------------------------- a new kind, by policy file alone

SIMULATION_POLICY = """\
apiVersion: wasp.dev/v1alpha1
kind: SchedulingIntegration
metadata:
  name: hpc-simulation
spec:
  target:
    group: hpc.test
    versions: [v1alpha2]
    kind: Simulation
    resource: simulations
  allowedPolicies: [gang]
  allowedDisruptionModes: [all]
  updateRules: elastic
  root:
    type: leaf
    path: spec.gangSpec.placement
    templateName: "{name}-ranks"
    podCount:
      path: spec.ranks
"""

P = "spec.gangSpec.placement"


def simulation(placement: object = None, ranks: int = 16) -> dict[str, t.Any]:
    spec: dict[str, t.Any] = {"ranks": ranks, "solver": "cg"}
    if placement is not None:
        spec["gangSpec"] = {"placement": placement, "timeoutSeconds": 30}
    return {
        "apiVersion": "hpc.test/v1alpha2",
        "kind": "Simulation",
        "metadata": {"name": "ocean"},
        "spec": spec,
    }


SIMULATION_CASES = [
    case(
        "simulation: a gang of all ranks, disrupted together, is admitted",
        simulation({**gang(16), "disruptionMode": {"all": {}}}),
    ),
    case(
        "simulation: minCount may not exceed spec.ranks",
        simulation(gang(32)),
        (INVALID, f"{P}.schedulingPolicy.gang.minCount"),
    ),
    case(
        "simulation: basic is not on the allow-list", simulation(BASIC), (FORBIDDEN, f"{P}.schedulingPolicy")
    ),
    case(
        "simulation: no block resolves to basic, which is not on the allow-list",
        simulation(),
        (FORBIDDEN, f"{P}.schedulingPolicy"),
    ),
    case(
        "simulation: disruption single is not on the allow-list",
        simulation({**gang(), "disruptionMode": {"single": {}}}),
        (FORBIDDEN, f"{P}.disruptionMode"),
    ),
    case(
        "simulation (elastic): the topology is immutable",
        simulation({**gang(), "schedulingConstraints": ZONE}),
        (INVALID, f"{P}.schedulingConstraints"),
        old=simulation({**gang(), "schedulingConstraints": RACK}),
    ),
]


def test_the_simulation_kind_is_unknown_without_its_policy() -> None:
    assert validate_object(simulation(gang(32)), policies=POLICIES).status is Status.SKIPPED


@pytest.mark.parametrize("c", SIMULATION_CASES, ids=[c.id for c in SIMULATION_CASES])
def test_a_new_kind_is_integrated_by_a_policy_file_alone(c: Case, tmp_path: Path) -> None:
    (tmp_path / "simulation.yaml").write_text(SIMULATION_POLICY)
    policies = PolicySet.load([tmp_path], builtin=True)
    assert {p.name for p in policies.policies} == {"batch-job", "batch-cronjob", "hpc-simulation"}
    result = validate_object(c.obj, c.old, policies=policies)
    assert sorted(e.key() for e in result.errors) == sorted(c.errors)
    assert result.status is (Status.INVALID if c.errors else Status.VALID)
    assert result.governed_by == "hpc-simulation"


# --------------------------------------------------------------------------- policy loading errors


def _policy_doc() -> dict[str, t.Any]:
    doc = yaml.safe_load(SIMULATION_POLICY)
    assert isinstance(doc, dict)
    return doc


def _with(dotted: str, value: object) -> str:
    return yaml.safe_dump(Maker(_policy_doc()).set(dotted, value).build())


def _without(dotted: str) -> str:
    return yaml.safe_dump(Maker(_policy_doc()).drop(dotted).build())


def _composite(child: dict[str, t.Any], *more: dict[str, t.Any]) -> str:
    root = {
        "type": "composite",
        "path": "spec.gangSpec.placement",
        "templateName": "{name}",
        "children": [child, *more],
    }
    return _with("spec.root", root)


_CHILD = {
    "type": "leaf",
    "forEach": "spec.stages",
    "itemKey": "name",
    "path": "placement",
    "templateName": "{name}-{key}",
    "podCount": {"path": "ranks"},
}


@dataclass(frozen=True)
class LoadCase:
    id: str
    text: str
    key: str  # the key the message must name


LOAD_ERRORS = [
    LoadCase("an unknown key is an error naming the key", _with("spec.root.pathh", "x"), "pathh"),
    LoadCase("an unknown top-level spec key is an error", _with("spec.updateRule", "elastic"), "updateRule"),
    LoadCase("a missing required key is an error", _without("spec.root.templateName"), "templateName"),
    LoadCase(
        "a path with an empty segment is an error",
        _with("spec.root.path", "spec..scheduling"),
        "spec.root.path",
    ),
    LoadCase(
        "a path with an unbalanced bracket is an error",
        _with("spec.root.podCount.path", "spec.ranks[0"),
        "spec.root.podCount.path",
    ),
    LoadCase(
        "an unknown placeholder in templateName is an error",
        _with("spec.root.templateName", "{namespace}-x"),
        "spec.root.templateName",
    ),
    LoadCase(
        "{key} without itemKey is an error",
        _with("spec.root.templateName", "{name}-{key}"),
        "spec.root.templateName",
    ),
    LoadCase(
        "{key} on a forEach child without itemKey is an error",
        _composite({k: v for k, v in _CHILD.items() if k != "itemKey"}),
        "spec.root.children[0].templateName",
    ),
    LoadCase(
        "a CEL condition that does not compile is an error",
        _with("spec.defaults", [{"name": "big", "when": "object.spec.(", "set": gang()}]),
        "spec.defaults[0].when",
    ),
    LoadCase(
        "a default for an unknown node is an error",
        _with("spec.defaults", [{"name": "big", "node": "nope", "set": gang()}]),
        "spec.defaults[0].node",
    ),
    LoadCase(
        "two nodes with one id are an error",
        _composite({**_CHILD, "id": "stage"}, {**_CHILD, "id": "stage"}),
        "spec.root.children[1].id",
    ),
    LoadCase(
        "a node id equal to the root's is an error",
        _composite({**_CHILD, "id": "root"}),
        "spec.root.children[0].id",
    ),
    LoadCase(
        "an unknown allow-list member is an error",
        _with("spec.allowedPolicies", ["gang", "fifo"]),
        "allowedPolicies",
    ),
    LoadCase(
        "an unknown feature gate is an error", _with("spec.featureGate", "WorkloadWithJobs"), "featureGate"
    ),
    LoadCase(
        "a composite root without children is an error",
        _with("spec.root", {"type": "composite", "path": "spec.x", "templateName": "{name}"}),
        "spec.root",
    ),
    LoadCase("a wrong apiVersion is an error", _with("apiVersion", "wasp.dev/v1"), "apiVersion"),
    LoadCase("a document that is not YAML is an error", "spec: [unclosed\n  root: {", "YAML"),
    LoadCase("a document that is a list is an error", "- apiVersion: wasp.dev/v1alpha1\n", "mapping"),
    LoadCase("an empty document is an error", "", "mapping"),
]


@pytest.mark.parametrize(
    "text", [SIMULATION_POLICY, _composite(_CHILD)], ids=["the leaf policy", "the composite policy"]
)
def test_the_policy_fixtures_load_before_they_are_broken(text: str, tmp_path: Path) -> None:
    # Each load-error case breaks one of these in one place, so it fails for that reason only.
    (tmp_path / "ok.yaml").write_text(text)
    assert PolicySet.load([tmp_path], builtin=False).warnings == ()


@pytest.mark.parametrize("c", LOAD_ERRORS, ids=[c.id for c in LOAD_ERRORS])
def test_policy_load_error_names_the_file_and_the_key(c: LoadCase, tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(c.text)
    with pytest.raises(PolicyError) as info:
        PolicySet.load([tmp_path])
    assert str(path) in str(info.value)
    assert c.key in str(info.value)


def test_two_policies_for_one_kind_are_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(SIMULATION_POLICY)
    (tmp_path / "b.yaml").write_text(_with("metadata.name", "hpc-simulation-again"))
    with pytest.raises(PolicyError) as info:
        PolicySet.load([tmp_path])
    message = str(info.value)
    assert str(tmp_path / "b.yaml") in message
    assert "hpc-simulation" in message and "Simulation" in message


def test_a_second_builtin_job_policy_is_an_error(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO_ROOT / "policies" / "batch-job.yaml").read_text())
    doc["metadata"]["name"] = "my-jobs"
    (tmp_path / "jobs.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(PolicyError, match="batch-job"):
        PolicySet.load([tmp_path])


def test_a_policy_with_a_builtin_name_replaces_the_builtin(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO_ROOT / "policies" / "batch-job.yaml").read_text())
    doc["spec"]["allowedPolicies"] = ["gang"]
    (tmp_path / "jobs.yaml").write_text(yaml.safe_dump(doc))
    policies = PolicySet.load([tmp_path])
    result = validate_object(J.scheduling(BASIC).build(), policies=policies)
    assert [e.key() for e in result.errors] == [(FORBIDDEN, f"{S}.schedulingPolicy")]


@pytest.mark.parametrize("key", ["allowedPolicies", "allowedDisruptionModes"])
def test_an_empty_allow_list_loads_with_a_warning(key: str, tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text(_with(f"spec.{key}", []))
    policies = PolicySet.load([tmp_path], builtin=False)
    assert len(policies.warnings) == 1
    assert str(path) in policies.warnings[0] and key in policies.warnings[0]


def test_an_empty_policy_allow_list_denies_everything(tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text(_with("spec.allowedPolicies", []))
    policies = PolicySet.load([tmp_path], builtin=False)
    result = validate_object(simulation(gang(4)), policies=policies)
    assert [e.key() for e in result.errors] == [(FORBIDDEN, f"{P}.schedulingPolicy")]


def test_a_missing_policy_location_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="nope"):
        PolicySet.load([tmp_path / "nope"])


def test_the_builtin_and_example_policies_load_without_warnings() -> None:
    assert POLICIES.warnings == ()


def test_nodes_without_a_priority_share_a_default_config_that_nothing_modifies() -> None:
    # extract shares one basic default between nodes; resolution must only ever copy it,
    # even when a callback fills the gang's minCount during validation and compilation.
    from webhook.compiler.types import SchedulingConfig, SchedulingPolicy
    from webhook.governed import tree as extract
    from webhook.governed.workloads import compile_object

    policies = PolicySet.load()
    obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "default", "uid": "u1"},
        "spec": {"parallelism": 3, "scheduling": {"schedulingPolicy": {"gang": {}}}, "template": {}},
    }
    assert validate_object(obj, policies=policies).status is Status.VALID
    policy = policies.for_object(obj)
    assert policy is not None
    compiled = compile_object(policy, obj, uid="u1")
    assert compiled.workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    assert extract._BASIC == SchedulingConfig(SchedulingPolicy(basic=True))
