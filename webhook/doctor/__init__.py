"""``wasp doctor``: is a cluster ready for WAS and for wasp?

* :mod:`.checks`: the verdicts, pure functions of the gathered facts (no Kubernetes client);
* :mod:`.command`: the click command and the I/O that gathers the facts.
"""

from __future__ import annotations
