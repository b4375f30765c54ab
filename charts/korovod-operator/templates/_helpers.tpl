{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "korovod.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: the release name, or release-chart when the release name does not contain it. */}}
{{- define "korovod.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "korovod.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "korovod.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "korovod.selectorLabels" -}}
app.kubernetes.io/name: {{ include "korovod.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "korovod.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "korovod.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "korovod.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The ConfigMap of the admins' profiles (templates/profiles.yaml). */}}
{{- define "korovod.profilesConfigMap" -}}
{{- printf "%s-profiles" (include "korovod.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* "true" when leader election is on: asked for, or more than one replica. */}}
{{- define "korovod.leaderElect" -}}
{{- if or .Values.leaderElection.enabled (gt (int .Values.replicaCount) 1) }}true{{ end }}
{{- end }}

{{/* The namespaces that get a Role in namespaced mode (validated: non-empty). */}}
{{- define "korovod.namespacedTargets" -}}
{{- if eq .Values.rbac.scope "namespaced" }}
{{- if not .Values.watchNamespaces }}
{{- fail "rbac.scope=namespaced needs watchNamespaces: the namespaces whose MPIJobs the operator reconciles" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The namespaced rules the controller needs wherever it reconciles MPIJobs. The same list is
tests/integration/helm/operator-rbac.json (the chart test checks one against the other).
*/}}
{{- define "korovod.workloadRules" -}}
- apiGroups: ["kubeflow.org"]
  resources: ["mpijobs"]
  verbs: ["get", "list", "watch", "update", "patch", "delete"]
- apiGroups: ["kubeflow.org"]
  resources: ["mpijobs/status"]
  verbs: ["update", "patch"]
- apiGroups: ["kubeflow.org"]
  resources: ["mpijobs/finalizers"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "create", "delete", "deletecollection"]
- apiGroups: [""]
  resources: ["services", "configmaps", "secrets"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["batch"]
  resources: ["jobs/status"]
  verbs: ["get", "update"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch", "update"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch", "update"]
{{- if gt (float64 .Values.operator.progressInterval) 0.0 }}
# Training progress (docs/progress.md): the launcher pods' logs, read-only.
- apiGroups: [""]
  resources: ["pods/log"]
  verbs: ["get"]
{{- end }}
{{- with .Values.operator.gangScheduling }}
{{- if eq . "volcano" }}
- apiGroups: ["scheduling.volcano.sh"]
  resources: ["podgroups"]
  verbs: ["get", "list", "watch", "create", "update", "delete"]
{{- else }}
- apiGroups: ["scheduling.x-k8s.io"]
  resources: ["podgroups"]
  verbs: ["get", "list", "watch", "create", "update", "delete"]
{{- end }}
{{- end }}
{{- if ne .Values.networkPolicy.mode "off" }}
- apiGroups: ["networking.k8s.io"]
  resources: ["networkpolicies"]
  verbs: ["get", "list", "watch", "create", "update", "delete"]
{{- end }}
{{- end }}

{{/* A map as "k=v,k2=v2", keys sorted (--network-policy-scraper-labels). */}}
{{- define "korovod.matchLabels" -}}
{{- $pairs := list }}
{{- range $k := keys . | sortAlpha }}
{{- $pairs = append $pairs (printf "%s=%s" $k (index $ $k)) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}

{{/* Cluster-scoped reads, needed in both RBAC scopes. */}}
{{- define "korovod.clusterRules" -}}
- apiGroups: ["scheduling.k8s.io"]
  resources: ["priorityclasses"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["apiextensions.k8s.io"]
  resources: ["customresourcedefinitions"]
  resourceNames:
    - mpijobs.kubeflow.org
    {{- with .Values.operator.gangScheduling }}
    - {{ ternary "podgroups.scheduling.volcano.sh" "podgroups.scheduling.x-k8s.io" (eq . "volcano") }}
    {{- end }}
  verbs: ["get"]
{{- end }}
