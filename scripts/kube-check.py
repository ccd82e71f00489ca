"""Checks rendered manifests (stdin) for scripts/kube-check.sh; argument: the overlay's name."""
import sys

import yaml

overlay = sys.argv[1]
documents = [d for d in yaml.safe_load_all(sys.stdin) if d]
problems = []
ALLOWED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                   "persistentVolumeClaim", "projected", "secret"}


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def secret_key(variable):
    return (variable or {}).get("valueFrom", {}).get("secretKeyRef", {}).get("key")


def check_pod(pod):
    bad = []
    security = pod.get("securityContext", {})
    if security.get("seccompProfile", {}).get("type") != "RuntimeDefault":
        bad.append("no seccompProfile RuntimeDefault")
    if security.get("runAsNonRoot") is not True or security.get("runAsUser", 0) == 0:
        bad.append("may run as root")
    if pod.get("automountServiceAccountToken") is not False:
        bad.append("mounts a service account token")
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            bad.append(key)
    for volume in pod.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= ALLOWED_VOLUMES:
            bad.append(f"volume {volume['name']} is {kinds}")
    for container in pod.get("containers", []) + pod.get("initContainers", []):
        context = container.get("securityContext", {})
        if context.get("allowPrivilegeEscalation") is not False:
            bad.append(f"{container['name']}: privilege escalation allowed")
        if context.get("privileged"):
            bad.append(f"{container['name']}: privileged")
        if "ALL" not in context.get("capabilities", {}).get("drop", []):
            bad.append(f"{container['name']}: capabilities not dropped")
        if set(context.get("capabilities", {}).get("add", [])) - {"NET_BIND_SERVICE"}:
            bad.append(f"{container['name']}: adds capabilities")
        if any("hostPort" in port for port in container.get("ports", [])):
            bad.append(f"{container['name']}: hostPort")
    return bad


summary = []
namespaces = {d["metadata"].get("namespace") for d in documents if d["kind"] != "Namespace"}
for document in documents:
    if document["kind"] not in ("Deployment", "StatefulSet"):
        continue
    name = document["metadata"]["name"]
    pod = document["spec"]["template"]["spec"]
    bad = check_pod(pod)
    container = pod["containers"][0]
    env = env_of(container)
    if name == "tilesolve-worker":
        if secret_key(env.get("TILESOLVE_WORKER_TOKEN")) != "worker-token":
            bad.append("worker token not from the Secret's worker-token")
        if "TILESOLVE_TOKEN" in env:
            bad.append("workers hold the client token")
        threads = env.get("TILESOLVE_THREADS", {}).get("valueFrom", {}).get("resourceFieldRef", {})
        if threads.get("resource") != "requests.cpu" or str(threads.get("divisor")) != "1":
            bad.append("threads not from the CPU request")
        if not any(a.startswith("--metrics-listen=") for a in container.get("args", [])):
            bad.append("worker metrics off")
        if not pod.get("topologySpreadConstraints"):
            bad.append("workers not spread over nodes")
        cpu = container["resources"]["requests"]["cpu"]
        facts = f"threads = CPU request ({cpu}), worker token, metrics on"
    else:
        if secret_key(env.get("TILESOLVE_TOKEN")) != "token":
            bad.append("client token not from the Secret")
        if secret_key(env.get("TILESOLVE_WORKER_TOKEN")) != "worker-token":
            bad.append("worker token not from the Secret")
        facts = "client and worker tokens"
    if bad:
        problems.extend(f"{overlay}: {name}: {b}" for b in bad)
    else:
        summary.append(f"{overlay}: {name}: restricted, seccomp RuntimeDefault, no API token, {facts}")


def selects(policy, labels):
    """Whether a NetworkPolicy's podSelector selects pods with `labels`."""
    selector = policy["spec"].get("podSelector", {})
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        value = labels.get(expression["key"])
        if expression["operator"] == "In" and value not in expression["values"]:
            return False
    return True


def egress_allows(policies, labels, port):
    """Whether some NetworkPolicy selecting the pod lets it connect out on `port`."""
    for policy in policies:
        if not selects(policy, labels) or "Egress" not in policy["spec"].get("policyTypes", []):
            continue
        for rule in policy["spec"].get("egress", []):
            ports = rule.get("ports")
            if not ports or any(p.get("port") == port for p in ports):
                return True
    return False


def url_port(url):
    scheme, _, rest = url.partition("://")
    host = rest.split("/")[0]
    if ":" in host:
        return int(host.rsplit(":", 1)[1])
    return 443 if scheme == "https" else 80


# Connections a pod is configured to start (traces, completion notices) need an egress rule:
# the base allows only DNS out, and a policy that blocks them fails quietly.
policies = [d for d in documents if d["kind"] == "NetworkPolicy"]
for document in documents:
    if document["kind"] not in ("Deployment", "StatefulSet"):
        continue
    labels = document["spec"]["template"]["metadata"].get("labels", {})
    env = env_of(document["spec"]["template"]["spec"]["containers"][0])
    for variable in ("OTEL_EXPORTER_OTLP_ENDPOINT", "TILESOLVE_NOTIFY_URL"):
        url = env.get(variable, {}).get("value")
        if not url:
            continue
        port = url_port(url)
        name = document["metadata"]["name"]
        if egress_allows(policies, labels, port):
            summary.append(f"{overlay}: {name}: {variable} on port {port} allowed out")
        else:
            problems.append(f"{overlay}: {name}: {variable} set but no NetworkPolicy lets it out on port {port}")
# Every Ingress backend is a Service port that exists.
services = {d["metadata"]["name"]: d for d in documents if d["kind"] == "Service"}
for document in documents:
    if document["kind"] != "Ingress":
        continue
    for rule in document["spec"].get("rules", []):
        for path in rule.get("http", {}).get("paths", []):
            backend = path["backend"]["service"]
            service = services.get(backend["name"])
            ports = [p["port"] for p in (service or {}).get("spec", {}).get("ports", [])]
            if backend["port"].get("number") not in ports:
                problems.append(f"{overlay}: Ingress {document['metadata']['name']}: no Service port {backend['name']}:{backend['port']}")
            else:
                summary.append(f"{overlay}: Ingress {document['metadata']['name']}: {rule['host']} to {backend['name']}:{backend['port']['number']}")
kinds = {d["kind"] for d in documents}
if "NetworkPolicy" not in kinds or "ServiceAccount" not in kinds:
    problems.append(f"{overlay}: NetworkPolicy or ServiceAccount missing")
for document in documents:
    if document["kind"] == "Namespace":
        labels = document["metadata"].get("labels", {})
        if labels.get("pod-security.kubernetes.io/enforce") != "restricted":
            problems.append(f"{overlay}: namespace does not enforce restricted")
        if namespaces != {document["metadata"]["name"]}:
            problems.append(f"{overlay}: objects outside the namespace: {namespaces}")
        summary.append(f"{overlay}: namespace {document['metadata']['name']} enforces restricted")
print("\n".join(summary))
if problems:
    print("\n".join(problems), file=sys.stderr)
    sys.exit(1)
