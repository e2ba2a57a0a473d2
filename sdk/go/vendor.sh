#!/bin/sh
# Makes vendor/ from Debian's Go packages in /usr/share/gocode/src (or
# $GOCODE), so the module builds offline with -mod=vendor: each module that
# go.mod requires becomes a symbolic link to Debian's copy, and
# vendor/modules.txt lists it as go.mod does. vendor/ is not checked in.
# Safe to run concurrently (a lock) and again (it keeps a vendor/ that is
# already what go.mod asks for).
#
#   sh vendor.sh && GOFLAGS=-mod=vendor go test ./...
set -eu
here=$(cd "$(dirname "$0")" && pwd)
gocode=${GOCODE:-/usr/share/gocode/src}
vendor="$here/vendor"
exec 9>"$here/.vendor.lock"
flock 9
tmp="$here/.vendor.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
# "path version" of every requirement: the indented lines of go.mod's require blocks.
sed -n -e 's/^[[:space:]]\{1,\}\([a-z][^[:space:]]*\)[[:space:]]\{1,\}\(v[^[:space:]]*\).*$/\1 \2/p' "$here/go.mod" > "$tmp/.requires"
while read -r path version; do
  if [ ! -d "$gocode/$path" ]; then
    echo "vendor.sh: $gocode/$path is missing; install Debian's Go packages (docs/go.md)" >&2
    rm -rf "$tmp"
    exit 1
  fi
  mkdir -p "$tmp/$(dirname "$path")"
  ln -s "$gocode/$path" "$tmp/$path"
  printf '# %s %s\n## explicit\n' "$path" "$version" >> "$tmp/modules.txt"
done < "$tmp/.requires"
rm -f "$tmp/.requires"
if [ -f "$vendor/modules.txt" ] && cmp -s "$vendor/modules.txt" "$tmp/modules.txt"; then
  rm -rf "$tmp"
else
  rm -rf "$vendor"
  mv "$tmp" "$vendor"
fi
