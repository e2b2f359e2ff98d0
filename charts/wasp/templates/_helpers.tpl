{{/* Names, labels and the policy data every template shares. */}}

{{- define "wasp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "wasp.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "wasp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "wasp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: webhook
{{- end -}}

{{- define "wasp.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "wasp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: wasp
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "wasp.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "wasp.serviceName" -}}{{ include "wasp.fullname" . }}{{- end -}}
{{- define "wasp.tlsSecretName" -}}{{ include "wasp.fullname" . }}-tls{{- end -}}
{{- define "wasp.validatingName" -}}{{ include "wasp.fullname" . }}-validating{{- end -}}
{{- define "wasp.mutatingName" -}}{{ include "wasp.fullname" . }}-mutating{{- end -}}
{{- define "wasp.rotatorName" -}}{{ include "wasp.fullname" . }}-cert-rotator{{- end -}}
{{- define "wasp.servingCertificateName" -}}{{ include "wasp.fullname" . }}-serving{{- end -}}

{{/*
The policy files the server loads, as a YAML map of file name -> file text: the built-in
files of the chart (unless policies.builtin is false, or a user policy has the same
metadata.name and so replaces it, as `wasp serve --policies` does), then policies.user.
The ConfigMap mounts exactly these, and the webhook entries are generated from exactly these.
*/}}
{{- define "wasp.policyFiles" -}}
{{- $userNames := list -}}
{{- range $file, $doc := .Values.policies.user -}}
{{- if has $doc.metadata.name $userNames -}}
{{- fail (printf "policies.user: two policies are named %q (wasp serve refuses that; a name may only replace a built-in policy)" $doc.metadata.name) -}}
{{- end -}}
{{- $userNames = append $userNames $doc.metadata.name -}}
{{- end -}}
{{- $files := dict -}}
{{- if .Values.policies.builtin -}}
{{- range $path, $_ := .Files.Glob "policies/*.yaml" -}}
{{- $text := $.Files.Get $path -}}
{{- $doc := fromYaml $text -}}
{{- if not (has $doc.metadata.name $userNames) -}}
{{- $_ := set $files (base $path) $text -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $file, $doc := .Values.policies.user -}}
{{- $_ := set $files (printf "user-%s.yaml" $file) (toYaml $doc) -}}
{{- end -}}
{{- toYaml $files -}}
{{- end -}}

{{/*
The integration policies of `integrations`, as a YAML map of file name -> file text, from the
chart's copies (policies/integrations/, kept byte-for-byte equal to the image's files by
tests/chart). The server and the reconciler load the image's files (`--integrations`), so
these are not in the ConfigMap; the chart reads them for the webhook rules and the RBAC.
*/}}
{{- define "wasp.integrationFiles" -}}
{{- $userNames := list -}}
{{- range $file, $doc := .Values.policies.user -}}
{{- $userNames = append $userNames $doc.metadata.name -}}
{{- end -}}
{{- $files := dict -}}
{{- range $name := .Values.integrations -}}
{{- $text := $.Files.Get (printf "policies/integrations/%s.yaml" $name) -}}
{{- if not $text -}}
{{- fail (printf "integrations: this chart carries no policy for %q (policies/integrations/%s.yaml); upgrade the chart or remove the name" $name $name) -}}
{{- end -}}
{{- $doc := fromYaml $text -}}
{{- if has $doc.metadata.name $userNames -}}
{{- fail (printf "policies.user: a policy is named %q like the integration %q (wasp serve refuses two policies of one name; drop the integration or rename the policy)" $doc.metadata.name $name) -}}
{{- end -}}
{{- $_ := set $files (printf "integration-%s.yaml" $name) $text -}}
{{- end -}}
{{- toYaml $files -}}
{{- end -}}

{{/* The policy documents the server loads (the ConfigMap's and the integrations'), parsed, as
a YAML list sorted by file name: the webhook entries and the reconciler's RBAC come from it. */}}
{{- define "wasp.policies" -}}
{{- $files := merge (include "wasp.policyFiles" . | fromYaml) (include "wasp.integrationFiles" . | fromYaml) -}}
{{- $docs := list -}}
{{- range $file := keys $files | sortAlpha -}}
{{- $docs = append $docs (fromYaml (index $files $file)) -}}
{{- end -}}
{{- toYaml $docs -}}
{{- end -}}

{{/*
The segments of a policy field path (`spec.x`, `metadata.annotations[a.b/c]`, `spec.l[0]`),
as FieldPath.parse reads them: a YAML list of {key: name} or {index: n}. A bracketed key may
hold dots (an annotation key), so the path cannot simply be split on ".".
*/}}
{{- define "wasp.pathSegments" -}}
{{- $segments := list -}}
{{- range $token := regexFindAll "\\[[^\\]]*\\]|[^.\\[\\]]+" . -1 -}}
{{- if hasPrefix "[" $token -}}
{{- $inner := $token | trimPrefix "[" | trimSuffix "]" -}}
{{- if regexMatch "^[0-9]+$" $inner -}}
{{- $segments = append $segments (dict "index" $inner) -}}
{{- else -}}
{{- $segments = append $segments (dict "key" $inner) -}}
{{- end -}}
{{- else -}}
{{- $segments = append $segments (dict "key" $token) -}}
{{- end -}}
{{- end -}}
{{- toYaml $segments -}}
{{- end -}}

{{/*
CEL: the field at `path` (relative to the expression `var`) is present. Index syntax and
`in` work for any key and never raise on a missing one (the apiserver applies failurePolicy
to an evaluation error); a list index is guarded by the list's size.
*/}}
{{- define "wasp.cel.present" -}}
{{- $expr := .var -}}
{{- $parts := list -}}
{{- range $seg := include "wasp.pathSegments" .path | fromYamlArray -}}
{{- if hasKey $seg "index" -}}
{{- $parts = append $parts (printf "size(%s) > %s" $expr $seg.index) -}}
{{- $expr = printf "%s[%s]" $expr $seg.index -}}
{{- else -}}
{{- $key := $seg.key | replace "\\" "\\\\" | replace "'" "\\'" -}}
{{- $parts = append $parts (printf "'%s' in %s" $key $expr) -}}
{{- $expr = printf "%s['%s']" $expr $key -}}
{{- end -}}
{{- end -}}
{{- join " && " $parts -}}
{{- end -}}

{{- define "wasp.cel.access" -}}
{{- $expr := .var -}}
{{- range $seg := include "wasp.pathSegments" .path | fromYamlArray -}}
{{- if hasKey $seg "index" -}}
{{- $expr = printf "%s[%s]" $expr $seg.index -}}
{{- else -}}
{{- $expr = printf "%s['%s']" $expr ($seg.key | replace "\\" "\\\\" | replace "'" "\\'") -}}
{{- end -}}
{{- end -}}
{{- $expr -}}
{{- end -}}

{{/*
CEL: some scheduling block of `node` or of its descendants is present, relative to `var`
(a forEach child is looked for in every element of its list).
*/}}
{{- define "wasp.cel.node" -}}
{{- $var := .var -}}
{{- $depth := .depth -}}
{{- $terms := list (printf "(%s)" (include "wasp.cel.present" (dict "var" $var "path" .node.path))) -}}
{{- range $child := .node.children | default list -}}
{{- if $child.forEach -}}
{{- $elem := printf "e%d" (int $depth) -}}
{{- $inner := include "wasp.cel.node" (dict "var" $elem "node" (omit $child "forEach") "depth" (add1 $depth)) -}}
{{- $list := include "wasp.cel.access" (dict "var" $var "path" $child.forEach) -}}
{{- $terms = append $terms (printf "(%s && %s.exists(%s, %s))" (include "wasp.cel.present" (dict "var" $var "path" $child.forEach)) $list $elem $inner) -}}
{{- else -}}
{{- $terms = append $terms (include "wasp.cel.node" (dict "var" $var "node" $child "depth" (add1 $depth))) -}}
{{- end -}}
{{- end -}}
{{- join " || " $terms -}}
{{- end -}}

{{/* CEL: the object, or on UPDATE the stored object, carries a scheduling block of `policy`. */}}
{{- define "wasp.cel.hasBlocks" -}}
{{- $root := .spec.root -}}
({{ include "wasp.cel.node" (dict "var" "object" "node" $root "depth" 0) }}) || (oldObject != null && ({{ include "wasp.cel.node" (dict "var" "oldObject" "node" $root "depth" 0) }}))
{{- end -}}

{{/* CEL: the object's controller ownerReference is an object of the policy's target kind. */}}
{{- define "wasp.cel.controlledBy" -}}
{{- $versions := list -}}
{{- range $v := .spec.target.versions -}}
{{- $versions = append $versions (printf "'%s'" (ternary $v (printf "%s/%s" $.spec.target.group $v) (eq $.spec.target.group ""))) -}}
{{- end -}}
'ownerReferences' in object['metadata'] && object['metadata']['ownerReferences'].exists(r, 'controller' in r && r['controller'] == true && r['apiVersion'] in [{{ join ", " $versions }}] && r['kind'] == '{{ .spec.target.kind }}')
{{- end -}}

{{/* namespaceSelector of every entry: never kube-system or the release namespace (whatever
excludedNamespaces says: decision 25), nor the other exclusions, nor a namespace that opted out. */}}
{{- define "wasp.namespaceSelector" -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
      {{- range (concat (list .Release.Namespace "kube-system") (.Values.webhooks.excludedNamespaces | default list) | compact | uniq) }}
      - {{ . | quote }}
      {{- end }}
  - key: {{ .Values.webhooks.optOutLabel | quote }}
    operator: NotIn
    values: ["disabled"]
  {{- with .Values.webhooks.namespaceSelectorExpressions }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/* clientConfig of an entry: the Service, the path, and caBundle in self-managed mode. */}}
{{- define "wasp.clientConfig" -}}
{{- $ := .root -}}
service:
  name: {{ include "wasp.serviceName" $ }}
  namespace: {{ $.Release.Namespace }}
  path: {{ .path }}
  port: 443
{{- if eq $.Values.certs.mode "self-managed" }}
caBundle: {{ index (include "wasp.selfManagedCerts" $ | fromYaml) "ca-bundle.crt" }}
{{- end }}
{{- end -}}

{{- define "wasp.webhookAnnotations" -}}
{{- if eq .Values.certs.mode "cert-manager" -}}
cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "wasp.servingCertificateName" .) }}
{{- end -}}
{{- end -}}

{{/*
The self-managed Secret's data (base64 values), generated once per rendering and shared by
the Secret and both webhook configurations (memoised in .Values, which every template of one
rendering shares). An existing Secret is kept as it is: `wasp certs rotate` owns it after
install, and `helm upgrade` must render the caBundle it last wrote.
*/}}
{{- define "wasp.selfManagedCerts" -}}
{{- if not (hasKey .Values "__waspCerts") -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "wasp.tlsSecretName" .) -}}
{{- $data := dict -}}
{{- if and $existing (hasKey ($existing.data | default dict) "ca-bundle.crt") -}}
{{- $data = $existing.data -}}
{{- else -}}
{{- $svc := include "wasp.serviceName" . -}}
{{- $ns := .Release.Namespace -}}
{{- $names := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) -}}
{{- $ca := genCA (printf "%s.%s webhook CA" $svc $ns | trunc 64) (int .Values.certs.caValidityDays) -}}
{{- $leaf := genSignedCert (printf "%s.%s.svc" $svc $ns) nil $names (int .Values.certs.servingValidityDays) $ca -}}
{{- $data = dict "ca.crt" ($ca.Cert | b64enc) "ca.key" ($ca.Key | b64enc) "tls.crt" ($leaf.Cert | b64enc) "tls.key" ($leaf.Key | b64enc) "ca-bundle.crt" ($ca.Cert | b64enc) -}}
{{- end -}}
{{- $_ := set .Values "__waspCerts" $data -}}
{{- end -}}
{{- toYaml (index .Values "__waspCerts") -}}
{{- end -}}


{{/* `--integrations` of `wasp serve` and `wasp reconcile` (empty: none). */}}
{{- define "wasp.integrationsArg" -}}
{{- with .Values.integrations }}--integrations={{ join "," . }}{{ end -}}
{{- end -}}

{{- define "wasp.reconcilerName" -}}{{ include "wasp.fullname" . }}-reconciler{{- end -}}

{{- define "wasp.reconcilerSelectorLabels" -}}
app.kubernetes.io/name: {{ include "wasp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: reconciler
{{- end -}}

{{/*
The policies `wasp reconcile` creates scheduling objects for, as a YAML list: every loaded
policy except those of the kinds whose own controller does it (batch Job and CronJob, the
1.37 Job controller: WAS_AWARE_KINDS of webhook/governed/reconcile_model.py; tests/chart
checks this list against the Python one through the rendered RBAC).
*/}}
{{- define "wasp.reconciledPolicies" -}}
{{- $aware := list "batch/Job" "batch/CronJob" -}}
{{- $out := list -}}
{{- range $policy := include "wasp.policies" . | fromYamlArray -}}
{{- if not (has (printf "%s/%s" $policy.spec.target.group $policy.spec.target.kind) $aware) -}}
{{- $out = append $out $policy -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/*
"true" when the feature gate `.gate` is on in `.gates` (apiserver syntax, the last setting
wins), else `.default`: FeatureGates.parse of webhook/vocab/gates.py, for the two gates the
chart's own decisions depend on.
*/}}
{{- define "wasp.gateOn" -}}
{{- $on := .default -}}
{{- range $item := splitList "," .gates -}}
{{- $pair := splitList "=" (trim $item) -}}
{{- if and (eq (len $pair) 2) (eq (trim (first $pair)) $.gate) -}}
{{- $on = eq (lower (trim (last $pair))) "true" -}}
{{- end -}}
{{- end -}}
{{- if $on -}}true{{- end -}}
{{- end -}}

{{/*
"true" when the reconciler runs: reconciler.enabled, the GenericWorkload gate on (on by default
in 1.37; off, it creates nothing and the scheduling APIs it checks for at start are not served),
and at least one policy it acts on. With only the Job and CronJob policies it would have nothing
to do (`wasp reconcile` refuses to start then), so the default install renders none.
*/}}
{{- define "wasp.reconcilerEnabled" -}}
{{- $gate := include "wasp.gateOn" (dict "gates" .Values.server.featureGates "gate" "GenericWorkload" "default" true) -}}
{{- if and .Values.reconciler.enabled $gate (include "wasp.reconciledPolicies" . | fromYamlArray) -}}true{{- end -}}
{{- end -}}

{{/*
"true" when the reconciler watches and creates CompositePodGroups: a reconciled policy has a
composite root and server.featureGates turns CompositePodGroup on (off by default in 1.37),
the condition `wasp reconcile` itself applies (webhook/reconciler/run.py).
*/}}
{{- define "wasp.reconcilerComposite" -}}
{{- $gate := include "wasp.gateOn" (dict "gates" .Values.server.featureGates "gate" "CompositePodGroup" "default" false) -}}
{{- $composite := false -}}
{{- range $policy := include "wasp.reconciledPolicies" . | fromYamlArray -}}
{{- if eq $policy.spec.root.type "composite" -}}{{- $composite = true -}}{{- end -}}
{{- end -}}
{{- if and $gate $composite -}}true{{- end -}}
{{- end -}}

{{/*
The policies whose pods or child objects the webhook stamps (`spec.stamping.pods`,
`childTemplates` or `membership`), as a YAML list: for these the webhook keeps its grouping
cache (all or nothing, docs/decisions.md §30), so it needs its token and read access to
Workloads, Pods, the child kinds and (with `spec.native.crdFields`) the CRDs. Empty: no API access.
*/}}
{{- define "wasp.stampingPolicies" -}}
{{- $out := list -}}
{{- range $policy := include "wasp.policies" . | fromYamlArray -}}
{{- $stamping := dig "spec" "stamping" dict $policy -}}
{{- if or (dig "pods" false $stamping) (dig "childTemplates" list $stamping) (dig "membership" "" $stamping) -}}
{{- $out = append $out $policy -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{- /*
The failurePolicy of one webhook entry: webhooks.failurePolicy when set; else Fail, except in
warn mode (server.enforcement=warn), where the entries a person's own create or update reaches
(validation, and the governed kind's defaults) fail open, so a trial never blocks them. The
stamping entries (pods, child objects, members) stay Fail: their callers are controllers,
which retry a refused create, while a pod admitted unstamped during an outage silently leaves
its gang, which no retry repairs (docs/install.md, "Warn before you deny").
Called with (dict "root" $ "stamps" bool).
*/ -}}
{{- define "wasp.failurePolicy" -}}
{{- if .root.Values.webhooks.failurePolicy -}}
{{ .root.Values.webhooks.failurePolicy }}
{{- else if and (eq .root.Values.server.enforcement "warn") (not .stamps) -}}
Ignore
{{- else -}}
Fail
{{- end -}}
{{- end -}}

{{- /*
What this release was configured to do, as `wasp doctor` reads it (docs/audit.md): an
annotation on both webhook configurations, so that doctor judges the install by its own
configuration with the read access it already needs (no Secret, no Helm). Keys: the
failurePolicy of each kind of entry, the timeouts, and the reconciler (installed, its Lease).
Called with (dict "root" $ "entries" N), N the configuration's entries.
*/ -}}
{{- define "wasp.installAnnotations" -}}
{{- $root := .root -}}
{{- $install := dict
  "failurePolicy" (dict
    "validating" (include "wasp.failurePolicy" (dict "root" $root "stamps" false))
    "defaulting" (include "wasp.failurePolicy" (dict "root" $root "stamps" false))
    "stamping" (include "wasp.failurePolicy" (dict "root" $root "stamps" true)))
  "timeoutSeconds" (dict
    "validating" $root.Values.webhooks.validatingTimeoutSeconds
    "mutating" $root.Values.webhooks.mutatingTimeoutSeconds)
  "reconciler" (dict
    "installed" (eq (include "wasp.reconcilerEnabled" $root) "true")
    "lease" (include "wasp.reconcilerName" $root)) -}}
wasp.dev/install: {{ toJson $install | quote }}
wasp.dev/entries: {{ .entries | quote }}
{{- end -}}
