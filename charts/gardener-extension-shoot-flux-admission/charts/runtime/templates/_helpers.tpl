{{- define "name" -}}
gardener-extension-shoot-flux-admission
{{- end -}}

{{- define "labels" -}}
app.kubernetes.io/name: {{ include "name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "image" -}}
{{- if .Values.image.ref -}}
{{ .Values.image.ref }}
{{- else if hasPrefix "sha256:" .Values.image.tag -}}
{{ printf "%s@%s" .Values.image.repository .Values.image.tag }}
{{- else -}}
{{ printf "%s:%s" .Values.image.repository .Values.image.tag }}
{{- end -}}
{{- end -}}

{{- define "tls-dir" -}}
/etc/gardener-extension-shoot-flux-admission/tls
{{- end -}}
