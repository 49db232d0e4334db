#!/usr/bin/env bash
# The image's base, built from Debian packages only (no registry):
#   deploy/container/base-image.sh IMAGE   (make image runs it when IMAGE does not exist yet)
# debootstraps a minimal Debian bookworm (--variant=minbase) from the package mirror this
# machine's apt uses, and imports it into podman as IMAGE. The mirror is read from apt itself
# (`apt-get indextargets`), so this works wherever `apt-get install` does; set DEBIAN_MIRROR
# (and DEBIAN_SECURITY_MIRROR) to choose others. Needs root (debootstrap), debootstrap, podman.
set -euo pipefail
image="${1:?usage: base-image.sh IMAGE}"
suite=bookworm
podman="${PODMAN:-podman}"

# The first deb URI whose release apt knows as Debian's `$1` (e.g. bookworm, bookworm-security).
apt_uri() {
  apt-get indextargets --format '$(REPO_URI) $(ORIGIN) $(CODENAME) $(TARGET_OF)' 'Created-By: Packages' 2>/dev/null |
    awk -v codename="$1" '$2 == "Debian" && $3 == codename && $4 == "deb" { print $1; exit }'
}
mirror="${DEBIAN_MIRROR:-$(apt_uri "$suite")}"
security="${DEBIAN_SECURITY_MIRROR:-$(apt_uri "$suite-security")}"
if [[ -z "$mirror" ]]; then
  echo "base-image.sh: apt knows no Debian $suite mirror here (run apt-get update, or set DEBIAN_MIRROR)" >&2
  exit 2
fi

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
chmod 0755 "$root"  # it becomes the image's /: mktemp made it 0700, closed to every other user
echo "== debootstrap --variant=minbase $suite from $mirror"
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.log" 2>&1 || {
  tail -30 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"

# apt inside the image uses the same mirror, with the suite's updates and security fixes
{
  echo "deb $mirror $suite main"
  echo "deb $mirror $suite-updates main"
  [[ -n "$security" ]] && echo "deb $security $suite-security main"
} >"$root/etc/apt/sources.list"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

echo "== podman import as $image"
tar -C "$root" --numeric-owner -c . |
  $podman import --quiet --change 'CMD ["/bin/bash"]' --message "debootstrap --variant=minbase $suite ($mirror)" - "$image" >/dev/null
