#!/usr/bin/env bash
# Checks the deployment files against their schemas, without a container engine
# or a cluster: deploy/compose.yaml against the Compose specification's JSON
# schema (as shipped in PyPI's docker-compose 1.29.2), and the Kubernetes
# manifests (rendered by `kubectl kustomize`, plus secret.example.yaml) against
# the Kubernetes 1.31 API schemas (PyPI's kubernetes-validate, strict: unknown
# fields are errors). Installs the Python packages it needs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

python3 -c 'import yaml, jsonschema' 2>/dev/null || python3 -m pip install --quiet pyyaml jsonschema
command -v kubernetes-validate >/dev/null || {
    python3 -m pip install --quiet kubernetes-validate
    if command -v pyenv >/dev/null; then pyenv rehash; fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download --quiet --no-deps --dest "$work" docker-compose==1.29.2
python3 - "$work" <<'PY'
import glob, json, sys, zipfile, yaml, jsonschema
wheel = glob.glob(f"{sys.argv[1]}/docker_compose-*.whl")[0]
schema = json.loads(zipfile.ZipFile(wheel).read("compose/config/compose_spec.json"))
errors = list(jsonschema.Draft7Validator(schema).iter_errors(yaml.safe_load(open("compose.yaml"))))
for e in errors:
    print(f"compose.yaml: {'/'.join(map(str, e.path))}: {e.message}")
if errors:
    sys.exit(1)
print("compose.yaml: valid against the Compose specification")
PY

command -v kubectl >/dev/null || { echo "deploy/check.sh: kubectl is needed to render deploy/k8s (kubectl kustomize)" >&2; exit 1; }
kubectl kustomize k8s >"$work/rendered.yaml"
kubernetes-validate --strict --quiet -k 1.31.0 "$work/rendered.yaml" k8s/secret.example.yaml
echo "k8s: $(grep -c '^kind:' "$work/rendered.yaml") rendered resources and the example secret valid against Kubernetes 1.31"

# The optional KEDA ScaledObject: against the fields KEDA documents (a strict, hand-written
# subset; KEDA's CRD is not packaged where this script can install it), and its Prometheus
# queries name series that /metrics serves (docs/OPERATIONS.md lists every one).
python3 - <<'PY'
import json, re, sys, yaml, jsonschema
doc = yaml.safe_load(open("k8s/autoscaling/keda-workers.yaml"))
schema = json.load(open("k8s/autoscaling/scaledobject.schema.json"))
errors = list(jsonschema.Draft7Validator(schema).iter_errors(doc))
for e in errors:
    print(f"keda-workers.yaml: {'/'.join(map(str, e.path))}: {e.message}")
documented = set(re.findall(r"`(atelier_[a-z_]+)`", open("../docs/OPERATIONS.md").read()))
for trigger in doc["spec"]["triggers"]:
    for series in re.findall(r"atelier_[a-z_]+", trigger["metadata"]["query"]):
        if series not in documented:
            errors.append(series)
            print(f"keda-workers.yaml: {series} is not a series docs/OPERATIONS.md documents")
if errors:
    sys.exit(1)
print("k8s/autoscaling/keda-workers.yaml: valid against the ScaledObject fields KEDA documents; its series exist")
PY

# The optional model-server example (Deployment, headless Service, HPA): against the
# Kubernetes schemas, and its External metric is a series /metrics serves.
kubernetes-validate --strict --quiet -k 1.31.0 k8s/autoscaling/model-server.yaml
python3 - <<'PY'
import re, sys, yaml
documented = set(re.findall(r"`(atelier_[a-z_]+)`", open("../docs/OPERATIONS.md").read()))
for doc in yaml.safe_load_all(open("k8s/autoscaling/model-server.yaml")):
    if doc["kind"] != "HorizontalPodAutoscaler":
        continue
    for metric in doc["spec"]["metrics"]:
        name = metric["external"]["metric"]["name"]
        if name not in documented:
            sys.exit(f"model-server.yaml: {name} is not a series docs/OPERATIONS.md documents")
print("k8s/autoscaling/model-server.yaml: valid against Kubernetes 1.31; its metric exists")
PY
