{{- define "name" -}}
gardener-extension-shoot-flux-admission
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

{{- define "tls-dir" -}}
/etc/gardener-extension-shoot-flux-admission/tls
{{- end -}}
