"""Policies: what wasp knows about each governed kind.

* :mod:`.model`: the frozen policy data (:class:`Policy`, :class:`NodeSpec`, ...);
* :mod:`.schema`: the JSON Schema of policy files;
* :mod:`.loading`: files → checked policies;
* :mod:`.policyset`: :class:`PolicySet`, the lookup every review makes.
"""

from __future__ import annotations

from webhook.policy.files import load_policies as load_policies
from webhook.policy.files import load_policy_file as load_policy_file
from webhook.policy.model import BUILTIN_POLICY_DIR as BUILTIN_POLICY_DIR
from webhook.policy.model import ChildTemplate as ChildTemplate
from webhook.policy.model import DefaultRule as DefaultRule
from webhook.policy.model import NodeSpec as NodeSpec
from webhook.policy.model import PodCount as PodCount
from webhook.policy.model import Policy as Policy
from webhook.policy.policyset import PolicySet as PolicySet
