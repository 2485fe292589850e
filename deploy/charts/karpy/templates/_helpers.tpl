{{/*
Names, labels and the controller's environment.

Names and labels follow Karpenter's chart, so selectors, dashboards and scrape jobs written
for it find karpy's objects by the same rules. The environment is built in one place
("karpy.env") from the values, one variable per karpy setting, so the settings walk in
tests/deploy/test_chart.py can check every setting against one template.
*/}}

{{- define "karpy.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release name when it already holds the chart name, else <release>-<name>. */}}
{{- define "karpy.fullname" -}}
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

{{- define "karpy.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "karpy.selectorLabels" -}}
app.kubernetes.io/name: {{ include "karpy.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "karpy.labels" -}}
helm.sh/chart: {{ include "karpy.chart" . }}
{{ include "karpy.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
metadata.annotations (indented for metadata, with its leading line break; nothing when
empty) from additionalAnnotations and an optional extra map (.extra), the latter winning.
*/}}
{{- define "karpy.annotations" -}}
{{- $all := merge (deepCopy (default (dict) .extra)) (deepCopy (default (dict) .root.Values.additionalAnnotations)) }}
{{- with $all }}
{{ printf "annotations:\n%s" (toYaml . | indent 2) | indent 2 }}
{{- end }}
{{- end }}

{{- define "karpy.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "karpy.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "karpy.image" -}}
{{- $tag := default .Chart.AppVersion .Values.controller.image.tag }}
{{- if .Values.controller.image.digest }}
{{- printf "%s:%s@%s" .Values.controller.image.repository $tag .Values.controller.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.controller.image.repository $tag }}
{{- end }}
{{- end }}

{{- define "karpy.containerName" -}}
{{- .Values.controller.containerName | default "controller" }}
{{- end }}

{{/*
A value of controller.env named .name, if any: controller.env may set a variable the chart
also renders (Karpenter's users set LEADER_ELECTION_NAME there), and the rendered Role and
environment must then follow it.
*/}}
{{- define "karpy.userEnv" -}}
{{- range .root.Values.controller.env }}
{{- if and (eq .name $.name) (hasKey . "value") }}{{ .value }}{{ end }}
{{- end }}
{{- end }}

{{/* The leader-election Lease's name and namespace, as the controller will use them. */}}
{{- define "karpy.leaseName" -}}
{{- $user := include "karpy.userEnv" (dict "root" . "name" "LEADER_ELECTION_NAME") }}
{{- default (tpl (toString .Values.settings.leaderElectionName) .) $user }}
{{- end }}

{{- define "karpy.leaseNamespace" -}}
{{- $user := include "karpy.userEnv" (dict "root" . "name" "LEADER_ELECTION_NAMESPACE") }}
{{- default .Release.Namespace (default (tpl (toString .Values.settings.leaderElectionNamespace) .) $user) }}
{{- end }}

{{- define "karpy.leaderElection" -}}
{{- $user := include "karpy.userEnv" (dict "root" . "name" "DISABLE_LEADER_ELECTION") }}
{{- if not (or .Values.settings.disableLeaderElection (eq $user "true")) }}true{{ end }}
{{- end }}

{{/*
A gate list in Karpenter's spelling: Name=bool,... The known gates come first, in the
order given (Karpenter's); any other key under the map follows in key order with its first
letter upper-cased, so a values file written for a later Karpenter still passes its gates on
(karpy ignores names it does not know, with one warning).
*/}}
{{- define "karpy.gates" -}}
{{- $gates := default (dict) .gates }}
{{- $names := .known }}
{{- range keys $gates | sortAlpha }}{{ if not (has . $names) }}{{ $names = append $names . }}{{ end }}{{ end }}
{{- $items := list }}
{{- range $names }}
{{- if not (kindIs "invalid" (index $gates .)) }}
{{- $items = append $items (printf "%s%s=%v" (upper (substr 0 1 .)) (substr 1 (len .) .) (index $gates .)) }}
{{- end }}
{{- end }}
{{- join "," $items }}
{{- end }}

{{/*
One plain environment variable: omitted when the value is null or "" (the controller's
default applies) and, unless .keepFalse, when it is false (every such setting defaults to
false). Zero is rendered: `vmMemoryOverheadPercent: 0` means 0. String values pass
through tpl, as in Karpenter's chart.
*/}}
{{- define "karpy.envVar" -}}
{{- $v := .value }}
{{- if kindIs "string" $v }}{{ $v = tpl $v .root }}{{ end }}
{{- $skip := or (kindIs "invalid" $v) (and (kindIs "string" $v) (eq $v "")) (and (kindIs "bool" $v) (not $v) (not .keepFalse)) }}
{{- if and (not $skip) (not (has .name .root.userEnvNames)) }}
- name: {{ .name }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end }}

{{/*
The controller's environment: every karpy setting, as Karpenter's chart names it where
it has one. Variables named in controller.env are left to it.
*/}}
{{- define "karpy.env" -}}
{{- $userNames := list }}
{{- range .Values.controller.env }}{{ $userNames = append $userNames .name }}{{ end }}
{{- $root := merge (dict "userEnvNames" $userNames) . }}
{{- $s := .Values.settings }}
{{- $clusterName := required "Chart cannot be installed without a valid settings.clusterName!" (tpl (toString (default "" $s.clusterName)) .) }}
{{- if $s.schedulerConfig }}
{{- fail "settings.schedulerConfig is not supported by karpy yet (kube-scheduler default spread constraints are not mirrored); unset it" }}
{{- end }}
{{- include "karpy.envVar" (dict "root" $root "name" "LOG_LEVEL" "value" .Values.logLevel) }}
{{- include "karpy.envVar" (dict "root" $root "name" "LOG_OUTPUT_PATHS" "value" (join "," (default (list) .Values.logOutputPaths))) }}
{{- include "karpy.envVar" (dict "root" $root "name" "LOG_ERROR_OUTPUT_PATHS" "value" (join "," (default (list) .Values.logErrorOutputPaths))) }}
{{- include "karpy.envVar" (dict "root" $root "name" "METRICS_PORT" "value" .Values.controller.metrics.port) }}
{{- include "karpy.envVar" (dict "root" $root "name" "HEALTH_PROBE_PORT" "value" .Values.controller.healthProbe.port) }}
{{- if not (has "SYSTEM_NAMESPACE" $userNames) }}
- name: SYSTEM_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- end }}
{{- if not (has "POD_NAME" $userNames) }}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- end }}
{{- if not (has "CPU_REQUESTS" $userNames) }}
- name: CPU_REQUESTS
  valueFrom:
    resourceFieldRef:
      containerName: {{ include "karpy.containerName" . }}
      divisor: 1m
      resource: requests.cpu
{{- end }}
{{- if not (has "MEMORY_LIMIT" $userNames) }}
- name: MEMORY_LIMIT
  valueFrom:
    resourceFieldRef:
      containerName: {{ include "karpy.containerName" . }}
      divisor: "0"
      resource: limits.memory
{{- end }}
{{- $known := list "reservedCapacity" "spotToSpotConsolidation" "nodeRepair" "nodeOverlay" "staticCapacity" "capacityBuffer" "terminateFirstDrift" "terminateFirstRepair" "podDeletionCostManagement" }}
{{- include "karpy.envVar" (dict "root" $root "name" "FEATURE_GATES" "value" (include "karpy.gates" (dict "gates" $s.featureGates "known" $known))) }}
{{- include "karpy.envVar" (dict "root" $root "name" "LEGACY_NODE_REPAIR" "value" $s.legacyNodeRepair) }}
{{- include "karpy.envVar" (dict "root" $root "name" "NOMINATED_NODE_NAMES" "value" $s.nominatedNodeNames) }}
{{- include "karpy.envVar" (dict "root" $root "name" "AWS_FEATURE_GATES" "value" (include "karpy.gates" (dict "gates" $s.awsFeatureGates "known" (list "nodeClassCEL" "rebootForRepair")))) }}
{{- include "karpy.envVar" (dict "root" $root "name" "BATCH_MAX_DURATION" "value" $s.batchMaxDuration) }}
{{- include "karpy.envVar" (dict "root" $root "name" "BATCH_IDLE_DURATION" "value" $s.batchIdleDuration) }}
{{- include "karpy.envVar" (dict "root" $root "name" "PREFERENCE_POLICY" "value" $s.preferencePolicy) }}
{{- include "karpy.envVar" (dict "root" $root "name" "MIN_VALUES_POLICY" "value" $s.minValuesPolicy) }}
{{- include "karpy.envVar" (dict "root" $root "name" "CLUSTER_CA_BUNDLE" "value" $s.clusterCABundle) }}
{{- include "karpy.envVar" (dict "root" $root "name" "CLUSTER_NAME" "value" $clusterName) }}
{{- include "karpy.envVar" (dict "root" $root "name" "CLUSTER_ENDPOINT" "value" $s.clusterEndpoint) }}
{{- include "karpy.envVar" (dict "root" $root "name" "ISOLATED_VPC" "value" $s.isolatedVPC) }}
{{- include "karpy.envVar" (dict "root" $root "name" "EKS_CONTROL_PLANE" "value" $s.eksControlPlane) }}
{{- include "karpy.envVar" (dict "root" $root "name" "VM_MEMORY_OVERHEAD_PERCENT" "value" $s.vmMemoryOverheadPercent) }}
{{- include "karpy.envVar" (dict "root" $root "name" "INTERRUPTION_QUEUE" "value" $s.interruptionQueue) }}
{{- include "karpy.envVar" (dict "root" $root "name" "ENABLE_ZONAL_SHIFT" "value" $s.enableZonalShift) }}
{{- include "karpy.envVar" (dict "root" $root "name" "RESERVED_ENIS" "value" $s.reservedENIs) }}
{{- include "karpy.envVar" (dict "root" $root "name" "IGNORE_DRA_REQUESTS" "value" $s.ignoreDRARequests "keepFalse" true) }}
{{- include "karpy.envVar" (dict "root" $root "name" "DISABLE_CLUSTER_STATE_OBSERVABILITY" "value" $s.disableClusterStateObservability) }}
{{- include "karpy.envVar" (dict "root" $root "name" "DISABLE_DRY_RUN" "value" $s.disableDryRun) }}
{{- include "karpy.envVar" (dict "root" $root "name" "AMI_REFRESH_INTERVAL" "value" $s.amiRefreshInterval) }}
{{- include "karpy.envVar" (dict "root" $root "name" "SUBNET_REFRESH_INTERVAL" "value" $s.subnetRefreshInterval) }}
{{- include "karpy.envVar" (dict "root" $root "name" "SECURITY_GROUP_REFRESH_INTERVAL" "value" $s.securityGroupRefreshInterval) }}
{{- include "karpy.envVar" (dict "root" $root "name" "SCHEDULING_TIMEOUT" "value" $s.schedulingTimeout) }}
{{- include "karpy.envVar" (dict "root" $root "name" "CLOUD_PROVIDER" "value" $s.cloudProvider) }}
{{- include "karpy.envVar" (dict "root" $root "name" "FAKE_INSTANCE_TYPES" "value" $s.fakeInstanceTypes) }}
{{- include "karpy.envVar" (dict "root" $root "name" "FAKE_REGISTRATION_DELAY" "value" $s.fakeRegistrationDelay) }}
{{- include "karpy.envVar" (dict "root" $root "name" "FAKE_REPAIR_TOLERATION" "value" $s.fakeRepairToleration) }}
{{- include "karpy.envVar" (dict "root" $root "name" "FAKE_INSUFFICIENT_CAPACITY" "value" $s.fakeInsufficientCapacity) }}
{{- include "karpy.envVar" (dict "root" $root "name" "METRICS_BIND_ADDRESS" "value" $s.metricsBindAddress) }}
{{- include "karpy.envVar" (dict "root" $root "name" "HEALTH_PROBE_BIND_ADDRESS" "value" $s.healthProbeBindAddress) }}
{{- include "karpy.envVar" (dict "root" $root "name" "ENABLE_PROFILING" "value" $s.enableProfiling) }}
{{- include "karpy.envVar" (dict "root" $root "name" "DISABLE_LEADER_ELECTION" "value" $s.disableLeaderElection) }}
{{- include "karpy.envVar" (dict "root" $root "name" "LEADER_ELECTION_NAME" "value" $s.leaderElectionName) }}
{{- include "karpy.envVar" (dict "root" $root "name" "LEADER_ELECTION_NAMESPACE" "value" $s.leaderElectionNamespace) }}
{{- include "karpy.envVar" (dict "root" $root "name" "DISABLE_CONTROLLER_WARMUP" "value" $s.disableControllerWarmup) }}
{{- include "karpy.envVar" (dict "root" $root "name" "KUBE_CLIENT_QPS" "value" $s.kubeClientQPS) }}
{{- include "karpy.envVar" (dict "root" $root "name" "KUBE_CLIENT_BURST" "value" $s.kubeClientBurst) }}
{{- include "karpy.envVar" (dict "root" $root "name" "KUBECONFIG" "value" $s.kubeconfig) }}
{{- include "karpy.envVar" (dict "root" $root "name" "LOG_FORMAT" "value" $s.logFormat) }}
{{- include "karpy.envVar" (dict "root" $root "name" "COEXIST_WITH_KARPENTER" "value" $s.coexistWithKarpenter) }}
{{- with .Values.controller.env }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Fills in a labelSelector from the selector labels on pod (anti-)affinity terms and spread
constraints that have none, as Karpenter's chart does, on copies of the values.
*/}}
{{- define "karpy.withSelector" -}}
{{- if not (hasKey .term "labelSelector") }}
{{- $_ := set .term "labelSelector" (dict "matchLabels" (include "karpy.selectorLabels" .root | fromYaml)) }}
{{- end }}
{{- end }}

{{- define "karpy.affinity" -}}
{{- $affinity := deepCopy (default (dict) .Values.affinity) }}
{{- range $kind := list "podAffinity" "podAntiAffinity" }}
{{- with (get $affinity $kind) }}
{{- range (default (list) (get . "requiredDuringSchedulingIgnoredDuringExecution")) }}
{{- include "karpy.withSelector" (dict "term" . "root" $) }}
{{- end }}
{{- range (default (list) (get . "preferredDuringSchedulingIgnoredDuringExecution")) }}
{{- include "karpy.withSelector" (dict "term" .podAffinityTerm "root" $) }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $affinity }}
{{- end }}

{{- define "karpy.topologySpread" -}}
{{- $constraints := deepCopy (default (list) .Values.topologySpreadConstraints) }}
{{- range $constraints }}
{{- include "karpy.withSelector" (dict "term" . "root" $) }}
{{- end }}
{{- toYaml $constraints }}
{{- end }}
