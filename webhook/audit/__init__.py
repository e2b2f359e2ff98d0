"""``wasp audit``: what is in the cluster now, judged as the webhook and the reconciler would.

* :mod:`.judge` and :mod:`.foreign_gangs`: the judgements, pure (no Kubernetes client);
* :mod:`.index`: the on-disk index of one namespace's scheduling objects;
* :mod:`.output`: the text, JSON and JUnit reports;
* :mod:`.command`: the click command and the I/O that reads the cluster page by page.
"""

from __future__ import annotations
