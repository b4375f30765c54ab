#!/usr/bin/env bash
# The operator image as a cluster runs it: the binary starts on its minimal base (every shared
# library it links is there), as the non-root user 65532, with no shell in the image, and fails
# with its own clear error, not the loader's, when it has no cluster to talk to.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
image=korovod-operator:$TAG
require_image "$image"

version=$(run_in "$image" --version)
expect_text "$version" '^korovod-operator [0-9]+\.[0-9]+\.[0-9]+' "--version"
pass "$image runs: $version"

help=$(run_in "$image" --help)
expect_text "$help" '--kubeconfig' "--help"

user=$(docker image inspect --format '{{.Config.User}}' "$image")
[[ $user == 65532:65532 ]] || fail "image user is '$user', not 65532:65532"
id_out=$(docker run --rm --label "korovod.test=$RUN_ID" --entrypoint /usr/local/bin/korovod-operator \
  --user "$user" "$image" --version)
[[ -n $id_out ]] || fail "the operator does not run as $user"
pass "runs as 65532:65532 (nonroot)"

if docker run --rm --label "korovod.test=$RUN_ID" --entrypoint /bin/sh "$image" -c true >/dev/null 2>&1; then
  fail "$image has a shell (/bin/sh): the operator's base should have none"
fi
pass "no shell in the image"

# No API server to reach: the operator says what is wrong and exits non-zero.
set +e
out=$(docker run --rm --label "korovod.test=$RUN_ID" "$image" --kubeconfig /nonexistent/kubeconfig 2>&1)
rc=$?
set -e
((rc != 0)) || fail "the operator exited 0 with no cluster"
if grep -Eq 'error while loading shared libraries|not found' <<<"$out" && ! grep -q kubeconfig <<<"$out"; then
  echo "$out"; fail "a library is missing in $image"
fi
expect_text "$out" 'kubeconfig' "the error names the kubeconfig"
pass "without a cluster it exits $rc naming the kubeconfig"

ca=$(docker create --label "korovod.test=$RUN_ID" "$image")
docker cp "$ca:/etc/ssl/certs/ca-certificates.crt" "$TEST_DIR/ca.crt"
[[ $(grep -c 'BEGIN CERTIFICATE' "$TEST_DIR/ca.crt") -gt 100 ]] || fail "the CA bundle has too few certificates"
pass "CA certificates present ($(grep -c 'BEGIN CERTIFICATE' "$TEST_DIR/ca.crt"))"
