"""TLS certificates for the webhook: generation, a pure validity check, the file helpers, the
rotation plan and the serving context that picks up a rotated pair.

Whatever decides anything is a pure function of PEM bytes and an explicit ``now``; only
:mod:`.files` and :mod:`.serving` (which loads the serving pair into an ``ssl.SSLContext``)
touch the filesystem. :mod:`.rotation` and :mod:`.serving` are imported by their module path.
"""

from __future__ import annotations

from webhook.certs.files import DevCerts as DevCerts
from webhook.certs.files import ensure_dev_certs as ensure_dev_certs
from webhook.certs.files import fingerprint as fingerprint
from webhook.certs.files import write_bundle as write_bundle
from webhook.certs.generate import CA_VALIDITY as CA_VALIDITY
from webhook.certs.generate import CLOCK_SKEW as CLOCK_SKEW
from webhook.certs.generate import SERVING_VALIDITY as SERVING_VALIDITY
from webhook.certs.generate import CertBundle as CertBundle
from webhook.certs.generate import KeyPair as KeyPair
from webhook.certs.generate import generate_bundle as generate_bundle
from webhook.certs.generate import generate_ca as generate_ca
from webhook.certs.generate import generate_serving_cert as generate_serving_cert
from webhook.certs.generate import service_dns_names as service_dns_names
from webhook.certs.validity import is_valid as is_valid
from webhook.certs.validity import not_after as not_after
from webhook.certs.validity import problems as problems
