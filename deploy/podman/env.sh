# Sourced by deploy/image.sh and scripts/kube-play.sh: picks the container engine, and for
# podman on a host with runc but no crun, this directory's containers.conf.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if command -v podman >/dev/null 2>&1; then
    engine=podman
    if [ -z "${CONTAINERS_CONF:-}" ] && command -v runc >/dev/null 2>&1 \
        && ! command -v crun >/dev/null 2>&1; then
        export CONTAINERS_CONF="$root/deploy/podman/containers.conf"
    fi
elif command -v docker >/dev/null 2>&1; then
    engine=docker
else
    echo "neither podman nor docker is installed (Debian: apt-get install podman runc)" >&2
    exit 1
fi
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)"
image="localhost/tilesolve:$version"
