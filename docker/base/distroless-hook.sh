#!/bin/sh
# The finishing step of korovod-base/distroless-cc (scripts/images), run on the root folder
# mmdebstrap made: the packages were only extracted (no maintainer scripts ran, no shell in the
# image), so this writes what their scripts and base-passwd would have: the users, the CA bundle, /tmp, and drops what a runtime
# image has no use for. $1 is the root of the image being made.
set -eu
root=$1
[ -d "$root/usr/lib" ] || { echo "distroless-hook: $root is not a root filesystem" >&2; exit 1; }
mkdir -p "$root/etc" "$root/tmp" "$root/home/nonroot" "$root/root" "$root/etc/ssl/certs"
chmod 1777 "$root/tmp"
chmod 0700 "$root/root"
# distroless's users: root and nonroot (65532), the user the operator image runs as.
cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
cat >"$root/etc/group" <<'GROUP'
root:x:0:
nogroup:x:65534:
nonroot:x:65532:
GROUP
chown 65532:65532 "$root/home/nonroot"
# The bundle update-ca-certificates would make from the Mozilla set the package ships.
cat "$root"/usr/share/ca-certificates/mozilla/*.crt >"$root/etc/ssl/certs/ca-certificates.crt"
[ -s "$root/etc/ssl/certs/ca-certificates.crt" ] || { echo "distroless-hook: no CA certificates" >&2; exit 1; }
# Only the runtime libraries matter: no docs, man pages, locales, or the tools ca-certificates
# pulled in to run its own scripts (openssl, perl's base, debconf).
rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/locale" "$root/usr/share/info" \
  "$root/var/cache/apt" "$root/var/lib/apt/lists" "$root/usr/share/perl5" "$root/usr/lib/x86_64-linux-gnu/perl-base" \
  "$root/usr/bin/perl" "$root/usr/bin/openssl" "$root/usr/bin/debconf"*
