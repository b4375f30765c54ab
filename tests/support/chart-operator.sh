# Sourced by the tests that run korovod-operator as the Helm chart would, without an image:
#   start_chart_operator KUBECTL OPERATOR RELEASE_NS RELEASE WORK_DIR LOG
# reads the args of the release's Deployment (whose pod the caller keeps off every node), makes
# a kubeconfig that authenticates as the chart's ServiceAccount only (the admin kubeconfig's
# server and CA, a bound token from the TokenRequest API, no client certificate), and starts the
# operator here with those args under that identity. The probe ports become 0 (any free port).
# Sets CHART_OPERATOR_PID and CHART_OPERATOR_SA; returns 1 with a message on stderr on failure.
start_chart_operator() {
  local kubectl=$1 operator=$2 release_ns=$3 release=$4 work=$5 log=$6
  local sa token server whoami a
  local -a chart_args args
  local kc=$work/sa.kubeconfig
  sa=$("$kubectl" -n "$release_ns" get deployment -l app.kubernetes.io/instance="$release" \
    -o jsonpath='{.items[0].spec.template.spec.serviceAccountName}')
  [[ -n $sa ]] || { echo "the chart's Deployment names no serviceAccountName" >&2; return 1; }
  mapfile -t chart_args < <("$kubectl" -n "$release_ns" get deployment -l app.kubernetes.io/instance="$release" \
    -o jsonpath='{range .items[0].spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}')
  [[ ${#chart_args[@]} -gt 0 ]] || { echo "the chart's Deployment has no operator args" >&2; return 1; }
  for a in "${chart_args[@]}"; do
    case $a in
      --health-port=*) args+=(--health-port=0) ;;
      --monitoring-port=*) args+=(--monitoring-port=0) ;;
      *) args+=("$a") ;;
    esac
  done
  token=$("$kubectl" -n "$release_ns" create token "$sa" --duration=1h) ||
    { echo "kubectl create token $sa failed" >&2; return 1; }
  server=$("$kubectl" config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
  "$kubectl" config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
    base64 -d >"$work/ca.crt"
  [[ -s $work/ca.crt ]] ||
    cp "$("$kubectl" config view --minify -o jsonpath='{.clusters[0].cluster.certificate-authority}')" "$work/ca.crt"
  KUBECONFIG=$kc "$kubectl" config set-cluster test --server="$server" --certificate-authority="$work/ca.crt" --embed-certs=true >/dev/null
  KUBECONFIG=$kc "$kubectl" config set-credentials sa --token="$token" >/dev/null
  KUBECONFIG=$kc "$kubectl" config set-context sa --cluster=test --user=sa >/dev/null
  KUBECONFIG=$kc "$kubectl" config use-context sa >/dev/null
  whoami=$(KUBECONFIG=$kc "$kubectl" auth whoami -o jsonpath='{.status.userInfo.username}')
  [[ $whoami == "system:serviceaccount:$release_ns:$sa" ]] ||
    { echo "the token authenticates as '$whoami'" >&2; return 1; }
  echo "operator: $whoami, args: ${args[*]}"
  # KUBECONFIG (the env var) wins over --kubeconfig; POD_* as the Deployment's downward API sets them.
  KUBECONFIG=$kc POD_NAME=$release-test POD_NAMESPACE=$release_ns "$operator" "${args[@]}" >"$log" 2>&1 &
  CHART_OPERATOR_PID=$!
  CHART_OPERATOR_SA=$sa
}
