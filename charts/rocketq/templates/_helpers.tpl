{{/*
Names and labels shared by every template. Object names are <release>-<chart> unless
overridden, cut to 63 characters (the limit of a Kubernetes label value and DNS label).
*/}}

{{- define "rocketq.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "rocketq.fullname" -}}
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

{{- define "rocketq.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rocketq.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "rocketq.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "rocketq.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: rocketq
{{- end }}

{{- define "rocketq.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "rocketq.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "rocketq.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
Namespaces the monitors look in: the watched ones, or every namespace.
*/}}
{{- define "rocketq.monitorNamespaceSelector" -}}
{{- if .Values.operator.watchNamespaces }}
namespaceSelector:
  matchNames:
    {{- toYaml .Values.operator.watchNamespaces | nindent 4 }}
{{- else }}
namespaceSelector:
  any: true
{{- end }}
{{- end }}

{{/*
RBAC rules for what the operator does inside a namespace it serves: its own resources, the
children it renders (StatefulSets for name servers and broker groups, Services, ConfigMaps,
PodDisruptionBudgets), the pods it restarts one by one during rolling updates and failover,
the claims of broker groups it removes after draining them, and the Events it posts.
Used by the ClusterRole (all namespaces) or by one Role per watched namespace.
*/}}
{{- define "rocketq.namespacedRules" -}}
- apiGroups: [rocketq.io]
  resources: [rocketmqclusters, rocketmqtopics, rocketmqconsumergroups]
  verbs: [get, list, watch, patch]
- apiGroups: [rocketq.io]
  resources: [rocketmqclusters/status, rocketmqtopics/status, rocketmqconsumergroups/status]
  verbs: [get, patch]
- apiGroups: [apps]
  resources: [statefulsets]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: [get, list, watch, create, patch, delete]
# spec.proxy and spec.console: the gRPC proxy's and the web console's Deployments, the console's
# Ingress (their Services are among "services" below).
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get, create, patch, delete]
- apiGroups: [networking.k8s.io]
  resources: [ingresses]
  verbs: [get, create, patch, delete]
# spec.proxy.tls: the proxy's TLS Secret, read (never listed, watched or written) to check its
# pair before pods mount it and to roll the proxy's pods when it is renewed.
- apiGroups: [""]
  resources: [secrets]
  verbs: [get]
# spec.analytics: the Spark jobs, their drivers' ServiceAccount, Role and RoleBinding.
- apiGroups: [sparkoperator.k8s.io]
  resources: [scheduledsparkapplications]
  verbs: [get, create, patch, delete]
- apiGroups: [""]
  resources: [serviceaccounts]
  verbs: [get, create, patch, delete]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [roles, rolebindings]
  verbs: [get, create, patch, delete]
# Pods, services and configmaps for the brokers; with persistentvolumeclaims (the analytics
# history claim) every verb the Spark drivers' Role grants: Kubernetes lets the operator create
# that Role only if it holds those permissions itself (RBAC escalation check).
- apiGroups: [""]
  resources: [pods, services, configmaps, persistentvolumeclaims]
  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, patch]
{{- if and .Values.operator.peering.enabled .Values.operator.watchNamespaces }}
- apiGroups: [kopf.dev]
  resources: [kopfpeerings]
  verbs: [get, list, watch, patch]
{{- end }}
{{- end }}

{{/*
Labels of the analytics objects: (list <root context> <component>).
*/}}
{{- define "rocketq.analyticsLabels" -}}
{{- $root := index . 0 }}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: rocketq-analytics
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/part-of: rocketq
{{- end }}

{{/*
Labels of the console's objects (templates/console.yaml).
*/}}
{{- define "rocketq.consoleSelectorLabels" -}}
app.kubernetes.io/name: {{ include "rocketq.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: console
{{- end }}

{{- define "rocketq.consoleLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "rocketq.consoleSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: rocketq
{{- end }}
