#!/usr/bin/env bash
# End-to-end check of `wasp reconcile` on a real kind cluster.
#
# THIS SCRIPT CANNOT RUN ON THE PROJECT'S BUILD MACHINES: they have no container runtime and no
# kube-apiserver binary, so tests/reconciler runs the same scenario against the stand-in API
# server (tests/standin) instead. It is for users with Docker (or Podman) and kind >= 0.30.
#
# What it does, with the feature gates and runtime-config the scheduling APIs need:
#   1. creates a kind cluster "wasp-e2e" (Kubernetes 1.37) with GenericWorkload and
#      CompositePodGroup on and scheduling.k8s.io/v1beta1 + v1alpha3 served;
#   2. installs the example CRDs (examples/trainer, examples/rolebased);
#   3. runs `wasp reconcile` on the host against the cluster (leader election on a Lease);
#   4. cold start: Trainers created before the reconciler get their Workload + PodGroup;
#      live: an InferenceService created afterwards gets its Workload, CompositePodGroup, PodGroups;
#      elastic: scaling a Trainer's spec.workers patches minCount in place;
#      restart: the reconciler is killed and restarted, nothing is duplicated;
#   5. deletes the cluster (KEEP_CLUSTER=1 keeps it).
#
# Usage: hack/e2e-kind.sh            (needs: kind, kubectl, python3 with `pip install .`)
set -euo pipefail
cd "$(dirname "$0")/.."

CLUSTER=${CLUSTER:-wasp-e2e}
NODE_IMAGE=${NODE_IMAGE:-kindest/node:v1.37.0}
WORK=$(mktemp -d)
KUBECONFIG_FILE="$WORK/kubeconfig"
RECONCILER_PID=""

for tool in kind kubectl python3; do
  command -v "$tool" >/dev/null || { echo "e2e-kind: $tool is required" >&2; exit 2; }
done

cleanup() {
  [[ -n "$RECONCILER_PID" ]] && kill "$RECONCILER_PID" 2>/dev/null || true
  [[ "${KEEP_CLUSTER:-0}" == 1 ]] || kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

cat >"$WORK/kind.yaml" <<YAML
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
featureGates:
  GenericWorkload: true
  CompositePodGroup: true
runtimeConfig:
  "scheduling.k8s.io/v1beta1": "true"
  "scheduling.k8s.io/v1alpha3": "true"
nodes:
  - role: control-plane
YAML

kind create cluster --name "$CLUSTER" --image "$NODE_IMAGE" --config "$WORK/kind.yaml" --kubeconfig "$KUBECONFIG_FILE" --wait 120s
export KUBECONFIG="$KUBECONFIG_FILE"
kubectl apply -f examples/trainer/crd.yaml -f examples/rolebased/crd.yaml
kubectl wait --for condition=established --timeout=60s crd/trainers.ml.example.com crd/inferenceservices.serving.example.com
kubectl create namespace ml
kubectl create namespace serving

start_reconciler() {
  wasp reconcile --kubeconfig "$KUBECONFIG_FILE" --lease-namespace default \
    --policies examples/trainer/policy.yaml --policies examples/rolebased/policy.yaml \
    --feature-gates CompositePodGroup=true --probe-address 127.0.0.1:18081 >"$WORK/reconcile.log" 2>&1 &
  RECONCILER_PID=$!
}

wait_for() {  # wait_for DESCRIPTION COMMAND...: retry for 60 s
  local what=$1; shift
  for _ in $(seq 120); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "e2e-kind: timed out waiting for $what" >&2; cat "$WORK/reconcile.log" >&2; exit 1
}

count() { kubectl get "$1" -A -o name 2>/dev/null | wc -l; }
expect_count() { [[ "$(count "$1")" == "$2" ]]; }

# Cold start over existing objects.
for i in 1 2 3; do
  sed "s/name: resnet/name: resnet-$i/" examples/trainer/trainer.yaml | kubectl apply -f -
done
start_reconciler
wait_for "the reconciler's readiness" curl -fsS http://127.0.0.1:18081/readyz
wait_for "3 Workloads" expect_count workloads.scheduling.k8s.io 3
wait_for "3 PodGroups" expect_count podgroups.scheduling.k8s.io 3

# An object created during the run: a composite tree.
kubectl apply -f examples/rolebased/inferenceservice.yaml
wait_for "the InferenceService's CompositePodGroup" expect_count compositepodgroups.scheduling.k8s.io 1
wait_for "its PodGroups" expect_count podgroups.scheduling.k8s.io 5

# Elastic resize: the gang shrinks with the workers; the PodGroup is patched in place.
kubectl -n ml patch trainer resnet-1 --type merge \
  -p '{"spec":{"workers":6,"scheduling":{"schedulingPolicy":{"gang":{"minCount":6}}}}}'
min_count_is_6() {
  kubectl -n ml get podgroups -o jsonpath='{range .items[*]}{.metadata.ownerReferences[0].name}={.spec.schedulingPolicy.gang.minCount}{"\n"}{end}' \
    | grep -qx 'resnet-1=6'
}
wait_for "resnet-1's PodGroup at minCount 6" min_count_is_6

# Restart mid-stream: nothing is duplicated.
kill -9 "$RECONCILER_PID"
for i in 4 5; do
  sed "s/name: resnet/name: resnet-$i/" examples/trainer/trainer.yaml | kubectl apply -f -
done
start_reconciler
wait_for "5 Trainer Workloads + 1 InferenceService Workload" expect_count workloads.scheduling.k8s.io 6
kubectl get workloads,podgroups,compositepodgroups -A
kubectl get events -A --field-selector reason=WorkloadCreated
echo "e2e-kind: ok"
