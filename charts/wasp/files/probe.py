# The post-install probe (templates/job-probe.yaml): POST an AdmissionReview to the webhook
# until it answers, trusting only the CA the apiserver trusts. argv: URL, CA file, seconds.
import json
import ssl
import sys
import time
import urllib.request

url, cafile, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
ref = {"group": "", "version": "v1"}
review = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": "wasp-post-install-probe",
        "kind": {**ref, "kind": "ConfigMap"}, "requestKind": {**ref, "kind": "ConfigMap"},
        "resource": {**ref, "resource": "configmaps"}, "requestResource": {**ref, "resource": "configmaps"},
        "name": "wasp-probe", "namespace": "default", "operation": "CREATE",
        "userInfo": {"username": "wasp-probe"},
        "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "wasp-probe", "namespace": "default"}},
        "oldObject": None, "dryRun": True,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
    },
}
deadline = time.monotonic() + limit
while True:
    try:
        context = ssl.create_default_context(cafile=cafile)
        body = json.dumps(review).encode()
        request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=context, timeout=5) as response:
            answer = json.load(response)["response"]
        if answer["uid"] == review["request"]["uid"] and answer["allowed"] is True:
            print(f"wasp answers at {url}")
            break
        problem = f"unexpected answer {answer!r}"
    except Exception as exc:  # not up yet, TLS not trusted yet, ...
        problem = repr(exc)
    if time.monotonic() > deadline:
        print(f"wasp does not answer at {url} after {limit:.0f} s: {problem}", file=sys.stderr)
        sys.exit(1)
    time.sleep(2)
