{{- define "name" -}}
gardener-extension-shoot-flux
{{- end -}}

{{- define "labels" -}}
app.kubernetes.io/name: {{ include "name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
Without a tag the image of the chart's own release runs: appVersion is the content of VERSION
(hack/update-chart-versions.sh), so no shipped path deploys a moving tag.
*/}}
{{- define "image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.ref -}}
{{ .Values.image.ref }}
{{- else if hasPrefix "sha256:" $tag -}}
{{ printf "%s@%s" .Values.image.repository $tag }}
{{- else -}}
{{ printf "%s:%s" .Values.image.repository $tag }}
{{- end -}}
{{- end -}}

{{/*
The component configuration. Only set values are written so that the controller's own defaults
apply to the rest; the loader decodes strictly, so a misspelt key fails the start.
*/}}
{{- define "config" -}}
{{- $c := .Values.config -}}
apiVersion: shoot-flux.extensions.config.gardener.cloud/v1alpha1
kind: ControllerConfiguration
{{- with $c.defaultFluxVersion }}
defaultFluxVersion: {{ . | quote }}
{{- end }}
{{- with $c.defaultKluctlVersion }}
defaultKluctlVersion: {{ . | quote }}
{{- end }}
{{- if or $c.sshKey.algorithm $c.sshKey.scope }}
sshKey:
  {{- with $c.sshKey.algorithm }}
  algorithm: {{ . | quote }}
  {{- end }}
  {{- with $c.sshKey.scope }}
  scope: {{ . | quote }}
  {{- end }}
{{- end }}
{{- with $c.knownHosts }}
knownHosts: {{ . | toJson }}
{{- end }}
{{- with $c.registry }}
registry: {{ . | toJson }}
{{- end }}
{{- if .Values.imagePullSecret.dockerConfigJSON }}
imagePullSecretFile: {{ include "image-pull-secret.file" . | quote }}
{{- end }}
{{- with $c.controllers }}
controllers:
{{ toYaml . | indent 2 }}
{{- end }}
{{- if or $c.timeouts.managedResourceApplied $c.timeouts.deletion $c.timeouts.hostKeyScan $c.timeouts.bootstrapFinalizers }}
timeouts:
  {{- with $c.timeouts.managedResourceApplied }}
  managedResourceApplied: {{ . | quote }}
  {{- end }}
  {{- with $c.timeouts.deletion }}
  deletion: {{ . | quote }}
  {{- end }}
  {{- with $c.timeouts.hostKeyScan }}
  hostKeyScan: {{ . | quote }}
  {{- end }}
  {{- with $c.timeouts.bootstrapFinalizers }}
  bootstrapFinalizers: {{ . | quote }}
  {{- end }}
{{- end }}
allowInsecureHostKeys: {{ $c.allowInsecureHostKeys | default false }}
{{- if or $c.hostPolicy.allowedNetworks $c.hostPolicy.allowedPorts }}
hostPolicy:
  {{- with $c.hostPolicy.allowedNetworks }}
  allowedNetworks: {{ toJson . }}
  {{- end }}
  {{- with $c.hostPolicy.allowedPorts }}
  allowedPorts: {{ toJson . }}
  {{- end }}
{{- end }}
{{- $rollout := $c.rollout | default dict }}
{{- $releases := $rollout.releases | default dict }}
{{- $hasReleases := or $releases.flux $releases.kluctl }}
{{- if or $rollout.window $hasReleases }}
rollout:
  {{- with $rollout.window }}
  window: {{ . | quote }}
  {{- end }}
  {{- if $hasReleases }}
  releases: {{ toJson $releases }}
  {{- end }}
{{- end }}
{{- with $c.healthCheckConfig }}
healthCheckConfig:
{{ toYaml . | indent 2 }}
{{- end }}
{{- /* YAML numbers reach the template as floats: large ones would render as 1.048576e+06. */}}
{{- $limits := dict }}
{{- range $name, $value := ($c.limits | default dict) }}
{{- if $value }}
{{- $_ := set $limits $name ($value | int64) }}
{{- end }}
{{- end }}
{{- with $limits }}
limits:
{{ toYaml . | indent 2 }}
{{- end }}
{{- if not (dig "monitoring" "shoot" "enabled" true $c) }}
monitoring:
  shoot:
    enabled: false
{{- end }}
{{- end -}}

{{- define "image-pull-secret.dir" -}}
/etc/shoot-flux-image-pull
{{- end -}}

{{- define "image-pull-secret.file" -}}
{{ include "image-pull-secret.dir" . }}/.dockerconfigjson
{{- end -}}

{{- define "imagevector-overwrite" -}}
{{- if kindIs "string" .Values.imageVectorOverwrite -}}
{{ .Values.imageVectorOverwrite }}
{{- else -}}
{{ toYaml .Values.imageVectorOverwrite }}
{{- end -}}
{{- end -}}

{{/*
gardenlet mounts the generic garden kubeconfig here and points its tokenFile to "token" in the
same directory, so the dedicated token has to be projected next to it.
*/}}
{{- define "garden-kubeconfig.dir" -}}
/var/run/secrets/gardener.cloud/garden/generic-kubeconfig
{{- end -}}

{{- define "garden-access.secret" -}}
garden-access-shoot-flux
{{- end -}}

{{- define "garden-access.generic-kubeconfig" -}}
{{- $name := "" -}}
{{- if .Values.gardener.garden -}}
{{- $name = .Values.gardener.garden.genericKubeconfigSecretName | default "" -}}
{{- end -}}
{{- required "gardener.garden.genericKubeconfigSecretName is missing: gardenAccess.dedicatedServiceAccount needs injectGardenKubeconfig: true in the ControllerDeployment" $name -}}
{{- end -}}
