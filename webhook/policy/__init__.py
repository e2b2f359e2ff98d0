"""Policies: what wasp knows about each governed kind (model, loading, the policy-file schema)."""

from __future__ import annotations

from webhook.policy.model import BUILTIN_POLICY_DIR as BUILTIN_POLICY_DIR
from webhook.policy.model import ChildTemplate as ChildTemplate
from webhook.policy.model import DefaultRule as DefaultRule
from webhook.policy.model import NodeSpec as NodeSpec
from webhook.policy.model import PodCount as PodCount
from webhook.policy.model import Policy as Policy
from webhook.policy.model import PolicySet as PolicySet
from webhook.policy.model import load_policies as load_policies
from webhook.policy.model import load_policy_file as load_policy_file
