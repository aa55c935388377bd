{{- define "name" -}}
gardener-extension-shoot-flux-admission
{{- end -}}

{{- define "labels" -}}
app.kubernetes.io/name: {{ include "name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
The clientConfig of one webhook; arguments: root (the chart context), caBundle (PEM), path.
*/}}
{{- define "clientConfig" -}}
{{- $wc := .root.Values.webhookConfig -}}
caBundle: {{ .caBundle | b64enc }}
{{- if $wc.url }}
url: {{ printf "%s%s" (trimSuffix "/" $wc.url) .path }}
{{- else if .root.Values.gardener.virtualCluster.enabled }}
url: {{ printf "https://%s.%s%s%s" $wc.service.name $wc.service.namespace (eq (int $wc.service.port) 443 | ternary "" (printf ":%d" (int $wc.service.port))) .path }}
{{- else }}
service:
  name: {{ $wc.service.name }}
  namespace: {{ $wc.service.namespace }}
  port: {{ $wc.service.port }}
  path: {{ .path }}
{{- end }}
{{- end -}}
