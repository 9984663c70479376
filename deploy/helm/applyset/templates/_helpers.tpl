{{/*
The chart name, truncated to 63 characters (the limit of a label value).
*/}}
{{- define "applyset.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The release's full name, used for every object. The release name alone when it
already contains the chart name.
*/}}
{{- define "applyset.fullname" -}}
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

{{- define "applyset.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object.
*/}}
{{- define "applyset.labels" -}}
helm.sh/chart: {{ include "applyset.chart" . }}
{{ include "applyset.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: applyset
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Labels that select the controller's pods (never change them in an upgrade: a
Deployment's selector is immutable).
*/}}
{{- define "applyset.selectorLabels" -}}
app.kubernetes.io/name: {{ include "applyset.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "applyset.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "applyset.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "applyset.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{- define "applyset.leaderElectionId" -}}
{{- default (include "applyset.fullname" .) .Values.leaderElection.id }}
{{- end }}

{{/*
Where cluster-admin is bound: "cluster" or "namespace" (see values.yaml).
*/}}
{{- define "applyset.clusterAdminScope" -}}
{{- $scope := .Values.rbac.clusterAdminScope | default (ternary "namespace" "cluster" (ne .Values.watchNamespace "")) }}
{{- if not (has $scope (list "cluster" "namespace")) }}
{{- fail (printf "rbac.clusterAdminScope must be \"\", \"cluster\" or \"namespace\", not %q" $scope) }}
{{- end }}
{{- if and (eq $scope "namespace") (eq .Values.watchNamespace "") }}
{{- fail "rbac.clusterAdminScope=namespace needs watchNamespace" }}
{{- end }}
{{- $scope }}
{{- end }}

{{/*
The controller's own rules (applying ApplySets' objects aside): the same as a
ClusterRole for all namespaces or as a Role in watchNamespace. Exactly the
requests it makes: applyset/tests/chart_rbac.rs runs the controller with these
rules only, and fails it without any one of them.
  applysets         list, watch (the controller's cache); patch (finalizer, the
                    KEP-3659 parent labels and annotations, server-side apply)
  applysets/status  patch (merge patch of the status)
  secrets           get (spec.source.secretRef)
  serviceaccounts   impersonate (spec.serviceAccountName, defaultServiceAccount)
  events.k8s.io     create, patch (Events on the ApplySet; series are patched)
*/}}
{{- define "applyset.controllerRules" -}}
- apiGroups: ["applyset.dev"]
  resources: ["applysets"]
  verbs: ["list", "watch", "patch"]
- apiGroups: ["applyset.dev"]
  resources: ["applysets/status"]
  verbs: ["patch"]
# The member records of large ApplySets, kept beside them (written by server-side apply).
- apiGroups: ["applyset.dev"]
  resources: ["applysetrecords"]
  verbs: ["get", "list", "create", "patch", "delete"]
# Source credentials and kubeconfigs (spec.kubeConfig) named by ApplySets, in their own namespace.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
# Apply as spec.serviceAccountName or the default ServiceAccount.
- apiGroups: [""]
  resources: ["serviceaccounts"]
  verbs: ["impersonate"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}

{{/*
Checks of the values that would otherwise make a broken release.
*/}}
{{- define "applyset.validateValues" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicaCount > 1 needs leaderElection.enabled=true (replicas would reconcile the same ApplySets at once)" }}
{{- end }}
{{- if not (has .Values.logFormat (list "plain" "json")) }}
{{- fail (printf "logFormat must be plain or json, not %q" .Values.logFormat) }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.service.enabled) }}
{{- fail "metrics.serviceMonitor.enabled needs metrics.service.enabled" }}
{{- end }}
{{- if and .Values.watchNamespace (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .Values.watchNamespace)) }}
{{- fail (printf "watchNamespace %q is not a namespace name" .Values.watchNamespace) }}
{{- end }}
{{- end }}
