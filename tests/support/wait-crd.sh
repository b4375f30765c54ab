# Sourced by the tests that apply a CRD and then use it.
# wait_crd_established NAME [SECONDS]: returns once the CRD NAME says Established=True (default:
# within 60 s), else fails saying so. `kubectl wait --for condition=established` is not enough:
# on a CRD applied a moment ago, whose status has no conditions yet, it fails at once
# (".status.conditions accessor error: <nil> is of the type <nil>"), where this keeps polling.
# Uses the sourcing script's kubectl function `k` when it has one, else kubectl on PATH.
wait_crd_established() {
  local name=$1 within=${2:-60} kc=kubectl
  declare -F k >/dev/null && kc=k
  local deadline=$((SECONDS + within))
  until [[ $("$kc" get crd "$name" -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null) == True ]]; do
    if ((SECONDS >= deadline)); then
      echo "CRD $name not Established within ${within}s: $("$kc" get crd "$name" -o jsonpath='{.status}' 2>&1)" >&2
      return 1
    fi
    sleep 0.2
  done
}
