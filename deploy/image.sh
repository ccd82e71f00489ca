#!/usr/bin/env bash
# Builds the container image localhost/tilesolve:<version> without pulling any base image: a
# statically linked release binary (glibc's static build resolves host names itself since
# 2.34, so no NSS modules are needed) in a FROM scratch image with CA certificates, a
# non-root user (10001) and `tilesolve` as the entrypoint. Podman, or docker when podman is
# absent. Prints the image's name and size.
#
#   deploy/image.sh              # build and tag localhost/tilesolve:<version>
#   podman run --rm localhost/tilesolve:0.1.0 --version
#
# TILESOLVE_BINARY=target/release/tilesolve deploy/image.sh packages a binary already built
# instead (the tests do, to skip a second build of the workspace): a dynamically linked one
# gets the shared libraries `ldd` names copied beside it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/podman/env.sh"
cd "$root"

context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
if [ -n "${TILESOLVE_BINARY:-}" ]; then
    binary="$TILESOLVE_BINARY"
    # Each library at the path the binary asks for (the loader's own path included).
    for library in $(ldd "$binary" 2>/dev/null | grep -o '/[^ ]*' || true); do
        mkdir -p "$context/root/$(dirname "$library")"
        cp -L "$library" "$context/root/$library"
    done
else
    target="$(rustc -vV | sed -n 's/^host: //p')"
    case "$target" in
        *-linux-gnu) ;;
        *) echo "a static build needs a *-linux-gnu host, not $target" >&2; exit 1 ;;
    esac
    # With --target, RUSTFLAGS reach only the target's crates: build scripts and proc macros
    # stay dynamic, as they must. The output goes to target/$target/, beside target/release.
    # RUSTFLAGS replaces .cargo/config.toml's flags, so its x86-64-v2 (POPCNT for every ranking)
    # is repeated here: without it the image's search ran on emulated popcounts.
    cpu=""
    case "$target" in x86_64-*) cpu="-C target-cpu=x86-64-v2" ;; esac
    RUSTFLAGS="-C target-feature=+crt-static $cpu" \
        cargo build --release --locked -p tilesolve-cli --target "$target"
    binary="target/$target/release/tilesolve"
    if ldd "$binary" 2>&1 | grep -q "=>"; then
        echo "$binary is not statically linked" >&2
        exit 1
    fi
fi

certificates=/etc/ssl/certs/ca-certificates.crt
if [ ! -f "$certificates" ]; then
    echo "no CA bundle at $certificates (Debian: apt-get install ca-certificates)" >&2
    exit 1
fi

# root/ is the image's file system; the writable directories are added owned by the user.
mkdir -p "$context/root/etc/ssl/certs" "$context/root/usr/local/bin" "$context/writable"
strip -o "$context/root/usr/local/bin/tilesolve" "$binary"
cp "$certificates" "$context/root/etc/ssl/certs/ca-certificates.crt"
mkdir -p "$context/root/usr/share/doc/tilesolve"
cp LICENSE-MIT LICENSE-APACHE "$context/root/usr/share/doc/tilesolve/"
# Completions and the manual page, for `podman cp` onto a host (the image has no shell).
share="$context/root/usr/share"
mkdir -p "$share/bash-completion/completions" "$share/zsh/vendor-completions" \
    "$share/fish/vendor_completions.d" "$share/man/man1"
"$binary" completions bash > "$share/bash-completion/completions/tilesolve"
"$binary" completions zsh > "$share/zsh/vendor-completions/_tilesolve"
"$binary" completions fish > "$share/fish/vendor_completions.d/tilesolve.fish"
"$binary" man > "$share/man/man1/tilesolve.1"
printf 'root:x:0:0:root:/:/sbin/nologin\ntilesolve:x:10001:10001:tilesolve:/data:/sbin/nologin\n' \
    > "$context/root/etc/passwd"
printf 'root:x:0:\ntilesolve:x:10001:\n' > "$context/root/etc/group"
cat > "$context/Containerfile" <<CONTAINERFILE
FROM scratch
COPY root/ /
COPY --chown=10001:10001 writable/ /data/
COPY --chown=10001:10001 writable/ /cache/
COPY --chown=10001:10001 writable/ /tmp/
ENV TILESOLVE_DATA=/data SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 10001:10001
WORKDIR /data
EXPOSE 7411 7412
LABEL org.opencontainers.image.title="tilesolve" \\
      org.opencontainers.image.version="$version" \\
      org.opencontainers.image.description="Optimal sliding-tile puzzle solver: coordinator and worker"
ENTRYPOINT ["/usr/local/bin/tilesolve"]
CMD ["--help"]
CONTAINERFILE
"$engine" build --quiet --tag "$image" "$context" >/dev/null
size="$("$engine" image inspect --format '{{.Size}}' "$image")"
echo "$image: $((size / 1000000)) MB ($size bytes), binary $(stat -c %s "$context/root/usr/local/bin/tilesolve") bytes"
