#!/usr/bin/env bash
# Builds Tessera's two container images without any container registry (`make image` runs it):
#
#   localhost/tessera-base:bookworm           Debian bookworm minbase + python3, python3-venv
#   localhost/tessera-postgres-base:bookworm  Debian bookworm minbase + postgresql-15
#       both made by mmdebstrap into var/image/*.tar and imported with `podman import`; kept
#       while the tarball, its recipe key and the image are all there
#   localhost/tessera:<pyproject version> and :latest    deploy/image/Containerfile
#   localhost/tessera-postgres:15                         deploy/image/postgres/Containerfile
#
# and writes var/image/sizes.json. Needs root (mmdebstrap's root mode, rootful podman) and
# reaches only PyPI (the wheelhouse) and the Debian mirror (the rootfs tarballs); installs
# podman, runc and mmdebstrap with apt-get when they are missing. Every podman call reads
# deploy/image/containers.conf (CONTAINERS_CONF): nothing under /etc is changed.
#
# Environment: PYTHON (for pip download; default python3, else .venv/bin/python),
# TESSERA_DEBIAN_MIRROR, TESSERA_DEBIAN_SECURITY_MIRROR, TESSERA_IMAGE_REFRESH_BASE=1 (rebuild
# the rootfs tarballs, e.g. for Debian security updates), TESSERA_IMAGE_NO_CACHE=1 (podman
# build --no-cache).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
here=deploy/image
out=var/image
mkdir -p "$out"
export CONTAINERS_CONF="$root/$here/containers.conf"

mirror="${TESSERA_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security_mirror="${TESSERA_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
started=$SECONDS

say() { printf 'image: %s\n' "$*"; }
die() { printf 'image: error: %s\n' "$*" >&2; exit 1; }
# Runs a command with its output in a log file; shows the log's end only when it fails.
quietly() {
  local logfile="$1"; shift
  if ! "$@" >"$logfile" 2>&1; then
    tail -n 40 "$logfile" >&2
    die "failed: $* (full log: $logfile)"
  fi
}

[ "$(id -u)" = 0 ] || die "run as root (mmdebstrap's root mode and rootful podman)"

# --- tools -------------------------------------------------------------------------------
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || [ -x /usr/sbin/runc ] || missing+=(runc)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
# DNS between pods (make k8s-smoke): only recommended by Debian's podman, so asked for by name.
[ -x /usr/lib/podman/netavark ] || missing+=(netavark)
[ -x /usr/lib/podman/aardvark-dns ] || missing+=(aardvark-dns)
# netavark programs the pod network's firewall with iptables, which Debian's podman only suggests; without
# it every container fails to start with "netavark: No such file or directory".
[ -x /usr/sbin/iptables ] || missing+=(iptables)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]} (apt-get)"
  quietly "$out/apt.log" apt-get update -qq
  quietly "$out/apt.log" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc mmdebstrap \
    netavark aardvark-dns iptables
fi

python="${PYTHON:-python3}"
if ! "$python" -m pip --version >/dev/null 2>&1; then
  [ -x .venv/bin/python ] || die "no pip: neither '$python -m pip' nor .venv/bin/python (make venv) works"
  python=.venv/bin/python
fi
version="$("$python" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')"

# --- wheelhouse: cp311 manylinux wheels for what the image installs ------------------------
# The image's two locks (make lock): the runtime venv's and the build stage's grpcio-tools. Redone only
# when they change (pip's own cache helps then).
locks=(requirements/runtime.txt requirements/codegen.txt)
wheel_key="$(cat "${locks[@]}" | sha256sum | cut -c1-64)"
if [ -d "$out/wheelhouse" ] && [ "$(cat "$out/wheelhouse.key" 2>/dev/null)" = "$wheel_key" ]; then
  say "wheelhouse: cached ($(find "$out/wheelhouse" -name '*.whl' | wc -l) wheels)"
else
  say "wheelhouse: downloading wheels for ${locks[*]} into $out/wheelhouse"
  rm -rf "$out/wheelhouse.new" && mkdir -p "$out/wheelhouse.new"
  # The image's python is Debian bookworm's CPython 3.11 (glibc 2.36): any manylinux wheel up
  # to 2.36. pip does not widen an explicit --platform to the older tags by itself.
  platforms=()
  for minor in $(seq 36 -1 5); do platforms+=(--platform "manylinux_2_${minor}_x86_64"); done
  platforms+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64)
  # Hash-checked like the install: a download the lock does not list fails here, not in the build.
  quietly "$out/pip-download.log" "$python" -m pip download --disable-pip-version-check --require-hashes \
    --only-binary=:all: "${platforms[@]}" --python-version 3.11 --implementation cp --abi cp311 \
    -d "$out/wheelhouse.new" -r "${locks[0]}" -r "${locks[1]}"
  rm -rf "$out/wheelhouse" && mv "$out/wheelhouse.new" "$out/wheelhouse"
  echo "$wheel_key" > "$out/wheelhouse.key"
  say "wheelhouse: $(find "$out/wheelhouse" -name '*.whl' | wc -l) wheels, $(du -sh "$out/wheelhouse" | cut -f1)"
fi

# --- base images: mmdebstrap rootfs tarball -> podman import --------------------------------
image_id() { podman image inspect --format '{{.Id}}' "$1" 2>/dev/null || true; }

# base_image REF TARBALL PACKAGES [MMDEBSTRAP-OPTION...]: a Debian bookworm minbase rootfs with
# PACKAGES (comma list). The merged-usr hook sets /usr up itself and installs usr-is-merged, so
# apt does not pull in usrmerge and, with it, a full perl (46 MB).
base_image() {
  local ref="$1" tar="$2" packages="$3"
  shift 3
  local args=(
    --variant=minbase
    --format=tar
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
    --include="$packages"
    "$@"
    --aptopt='Acquire::Retries "3"'
    --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/info/*'
    --dpkgopt='path-exclude=/usr/share/locale/*'
    --dpkgopt='path-include=/usr/share/locale/locale.alias'
    --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-include=/usr/share/doc/*/copyright'
    --customize-hook='rm -rf "$1"/var/log/apt/* "$1"/var/log/dpkg.log "$1"/var/log/alternatives.log "$1"/var/cache/debconf/*-old "$1"/var/cache/ldconfig/aux-cache'
    bookworm "$tar.tmp"
    "deb $mirror bookworm main"
    "deb $mirror bookworm-updates main"
    "deb $security_mirror bookworm-security main"
  )
  local key
  key="$(printf '%s\n' "${args[@]}" | sha256sum | cut -c1-64)"
  if [ -z "${TESSERA_IMAGE_REFRESH_BASE:-}" ] && [ -f "$tar" ] && [ "$(cat "$tar.key" 2>/dev/null)" = "$key" ]; then
    if [ -n "$(image_id "$ref")" ]; then
      say "$ref: cached ($tar)"
      return
    fi
  else
    say "$ref: mmdebstrap bookworm minbase + $packages -> $tar"
    rm -f "$tar.tmp"
    quietly "$tar.log" mmdebstrap "${args[@]}"
    mv "$tar.tmp" "$tar"
    echo "$key" > "$tar.key"
  fi
  local old
  old="$(image_id "$ref")"
  quietly "$tar.import.log" podman import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    --message "mmdebstrap --variant=minbase bookworm + $packages" \
    "$tar" "$ref"
  [ -z "$old" ] || [ "$old" = "$(image_id "$ref")" ] || podman rmi "$old" >/dev/null 2>&1 || true
  say "$ref: imported"
}

base_image localhost/tessera-base:bookworm "$out/tessera-base-bookworm.tar" python3,python3-venv,ca-certificates
# postgresql-15 depends on LLVM for its JIT: leaving its files out (dpkg path-exclude, so dpkg's
# records stay whole) saves 155 MB; the server then runs without JIT (the entrypoint sets jit=off).
base_image localhost/tessera-postgres-base:bookworm "$out/tessera-postgres-base-bookworm.tar" postgresql-15,ca-certificates \
  --dpkgopt='path-exclude=/usr/lib/x86_64-linux-gnu/libLLVM-*' \
  --dpkgopt='path-exclude=/usr/lib/x86_64-linux-gnu/libz3.so*' \
  --dpkgopt='path-exclude=/usr/lib/postgresql/*/lib/llvmjit*' \
  --dpkgopt='path-exclude=/usr/lib/postgresql/*/lib/bitcode/*'

# --- the images -----------------------------------------------------------------------------
# build NAME LOG podman-build-args...: the previous image of the first tag is removed when the
# build replaced it and nothing else tags it (no pile of dangling images; the layer cache stays).
build() {
  local ref="$1" log="$2"; shift 2
  local old new t0=$SECONDS
  old="$(image_id "$ref")"
  local cache=()
  [ -z "${TESSERA_IMAGE_NO_CACHE:-}" ] || cache=(--no-cache)
  quietly "$log" podman build --network=none --layers "${cache[@]}" "$@"
  new="$(image_id "$ref")"
  if [ -n "$old" ] && [ "$old" != "$new" ]; then podman rmi "$old" >/dev/null 2>&1 || true; fi
  say "$ref: built in $((SECONDS - t0)) s"
}

[ -f services/web/static/index.html ] || die "services/web/static is missing: run 'make frontend' first"
[ -f services/mcp/static/answer.html ] || die "services/mcp/static is missing: run 'make frontend' first"
build "localhost/tessera:$version" "$out/build-tessera.log" \
  -f $here/Containerfile --ignorefile $here/.containerignore \
  --build-arg BASE_IMAGE=localhost/tessera-base:bookworm --build-arg TESSERA_VERSION="$version" \
  -t "localhost/tessera:$version" -t localhost/tessera:latest .
build localhost/tessera-postgres:15 "$out/build-tessera-postgres.log" \
  -f $here/postgres/Containerfile \
  --build-arg BASE_IMAGE=localhost/tessera-postgres-base:bookworm \
  -t localhost/tessera-postgres:15 $here/postgres

# --- smoke checks (read-only root, no network, the images' own users) -----------------------
quietly "$out/smoke.log" podman run --rm --network=none --read-only --tmpfs /tmp "localhost/tessera:$version" \
  python -c 'import services.host, shared.gen, grpc, sqlalchemy'
quietly "$out/smoke.log" podman run --rm --network=none --read-only localhost/tessera-postgres:15 pg_ctl --version

# --- sizes ------------------------------------------------------------------------------------
size_of() { podman image inspect --format '{{.Size}}' "$1"; }
tessera_size="$(size_of "localhost/tessera:$version")"
postgres_size="$(size_of localhost/tessera-postgres:15)"
printf '{"tessera": %s, "tessera-postgres": %s}\n' "$tessera_size" "$postgres_size" > "$out/sizes.json"
mb() { awk -v b="$1" 'BEGIN { printf "%.0f MB", b / 1000000 }'; }
say "done in $((SECONDS - started)) s; sizes in $out/sizes.json"
printf '  %-40s %s\n' "localhost/tessera:$version (:latest)" "$(mb "$tessera_size")" \
  localhost/tessera-postgres:15 "$(mb "$postgres_size")"
