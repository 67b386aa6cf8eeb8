package deploy

// The Kubernetes manifests in deploy/kubernetes, decoded strictly into the
// Kubernetes API types (an unknown or misspelt field fails), with the
// invariants a production rollout depends on, and the ConfigMap's
// configuration passing floodgate's own validation.

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/config"
)

var update = flag.Bool("update", false, "rewrite kubernetes/prometheusrule.yaml from prometheus/floodgate-alerts.yml")

const (
	kubeDir            = "kubernetes"
	alertsFile         = "prometheus/floodgate-alerts.yml"
	prometheusRuleFile = "kubernetes/prometheusrule.yaml"
	configPath         = "/etc/floodgate/floodgate.yaml"
)

// Prometheus Operator's kinds, as far as these manifests use them: not in
// k8s.io/api, and too small to import the operator's module for.
type serviceMonitor struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

type prometheusRule struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            ruleGroups        `json:"spec"`
}

type ruleGroups struct {
	Groups []struct {
		Name     string `json:"name"`
		Interval string `json:"interval,omitempty"`
		Rules    []struct {
			Alert         string            `json:"alert,omitempty"`
			Record        string            `json:"record,omitempty"`
			Expr          string            `json:"expr"`
			For           string            `json:"for,omitempty"`
			KeepFiringFor string            `json:"keep_firing_for,omitempty"`
			Labels        map[string]string `json:"labels,omitempty"`
			Annotations   map[string]string `json:"annotations,omitempty"`
		} `json:"rules"`
	} `json:"groups"`
}

type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// manifests are the kustomization's resources, decoded by kind.
type manifests struct {
	kustomization  kustomization
	configMap      corev1.ConfigMap
	deployment     appsv1.Deployment
	service        corev1.Service
	pdb            policyv1.PodDisruptionBudget
	hpa            autoscalingv2.HorizontalPodAutoscaler
	serviceMonitor serviceMonitor
	prometheusRule prometheusRule
}

func unmarshalStrict(t *testing.T, name string, data []byte, v any) {
	t.Helper()
	if err := sigsyaml.UnmarshalStrict(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func loadManifests(t *testing.T) *manifests {
	t.Helper()
	var m manifests
	unmarshalStrict(t, "kustomization.yaml", readFile(t, filepath.Join(kubeDir, "kustomization.yaml")), &m.kustomization)
	if m.kustomization.APIVersion != "kustomize.config.k8s.io/v1beta1" || m.kustomization.Kind != "Kustomization" {
		t.Fatalf("kustomization.yaml: %s %s", m.kustomization.APIVersion, m.kustomization.Kind)
	}
	// Every manifest in the directory is a resource, and the other way
	// round: none is forgotten.
	entries, err := os.ReadDir(kubeDir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".yaml") && n != "kustomization.yaml" {
			files = append(files, n)
		}
	}
	resources := slices.Clone(m.kustomization.Resources)
	slices.Sort(resources)
	if diff := cmp.Diff(resources, files); diff != "" {
		t.Errorf("kustomization resources (-listed +in the directory):\n%s", diff)
	}
	seen := map[string]bool{}
	for _, name := range m.kustomization.Resources {
		data := readFile(t, filepath.Join(kubeDir, name))
		if docs := regexp.MustCompile(`(?m)^---`).FindAllIndex(data, -1); len(docs) > 0 {
			t.Fatalf("%s: one object a file", name)
		}
		var tm metav1.TypeMeta
		if err := sigsyaml.Unmarshal(data, &tm); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		kind := tm.APIVersion + " " + tm.Kind
		if seen[kind] {
			t.Fatalf("%s: a second %s", name, kind)
		}
		seen[kind] = true
		var v any
		switch kind {
		case "v1 ConfigMap":
			v = &m.configMap
		case "apps/v1 Deployment":
			v = &m.deployment
		case "v1 Service":
			v = &m.service
		case "policy/v1 PodDisruptionBudget":
			v = &m.pdb
		case "autoscaling/v2 HorizontalPodAutoscaler":
			v = &m.hpa
		case "monitoring.coreos.com/v1 ServiceMonitor":
			v = &m.serviceMonitor
		case "monitoring.coreos.com/v1 PrometheusRule":
			v = &m.prometheusRule
		case "v1 Secret":
			t.Fatalf("%s: a Secret: secrets are created apart (kubectl create secret), never kept with the manifests", name)
		default:
			t.Fatalf("%s: unexpected %s", name, kind)
		}
		unmarshalStrict(t, name, data, v)
	}
	if len(seen) != 7 {
		t.Fatalf("kinds %v: want a ConfigMap, Deployment, Service, PodDisruptionBudget, HorizontalPodAutoscaler, ServiceMonitor and PrometheusRule", seen)
	}
	return &m
}

// secretVars are the variables whose values are secrets: set only from a
// Secret, never written in the manifests.
var secretVars = []string{"FLOODGATE_ADMIN_TOKEN", "HMAC_SIGNING_SECRET", "API_CLIENT_ID", "API_CLIENT_SECRET", "REDIS_URL"}

func TestKubernetes(t *testing.T) {
	m := loadManifests(t)
	d := m.deployment
	pod := d.Spec.Template.Spec
	podLabels := labels.Set(d.Spec.Template.Labels)
	selects := func(what string, s *metav1.LabelSelector) {
		t.Helper()
		sel, err := metav1.LabelSelectorAsSelector(s)
		if err != nil || sel.Empty() || !sel.Matches(podLabels) {
			t.Errorf("%s's selector %v (%v) does not select the pods (%v)", what, s, err, podLabels)
		}
	}
	selects("the Deployment", d.Spec.Selector)
	// The autoscaler owns the replica count: a count in the manifest
	// would put it back at every kubectl apply, undoing what the
	// autoscaler chose (under load, back down to the fixed count). Its
	// minReplicas keeps two running, for availability.
	h := m.hpa.Spec
	if h.ScaleTargetRef != (autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name}) {
		t.Errorf("HorizontalPodAutoscaler scales %+v, not the Deployment %s", h.ScaleTargetRef, d.Name)
	}
	if d.Spec.Replicas != nil {
		t.Errorf("the Deployment sets replicas: %d: every kubectl apply would reset the count the HorizontalPodAutoscaler chose; leave it to the autoscaler's minReplicas", *d.Spec.Replicas)
	}
	if h.MinReplicas == nil || *h.MinReplicas < 2 || h.MaxReplicas < *h.MinReplicas || len(h.Metrics) == 0 {
		t.Fatalf("HorizontalPodAutoscaler min %v max %d metrics %d: want at least 2 (a rollout, an eviction or a node failure leaves one serving), max ≥ min, a metric", h.MinReplicas, h.MaxReplicas, len(h.Metrics))
	}
	minReplicas := *h.MinReplicas
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if !slices.ContainsFunc(m.kustomization.Images, func(i struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	}) bool {
		return i.Name == c.Image && i.NewTag != "" && i.NewTag != "latest"
	}) {
		t.Errorf("image %q has no pinned tag in the kustomization's images", c.Image)
	}
	// A name without a registry is a short name, which the node's
	// runtime resolves in a registry of its choosing (Docker Hub's
	// library, or the first of its search registries to answer): no one
	// publishes floodgate's image, so the name says whose registry.
	for _, i := range m.kustomization.Images {
		host, _, ok := strings.Cut(i.NewName, "/")
		if !ok || (!strings.ContainsAny(host, ".:") && host != "localhost") {
			t.Errorf("kustomization image %s: newName %q names no registry: a short name is pulled from wherever the node resolves it", i.Name, i.NewName)
		}
	}
	if diff := cmp.Diff(c.Args, []string{"serve", "--config", configPath}); diff != "" {
		t.Errorf("args (-got +want):\n%s", diff)
	}

	// The configuration: mounted from the ConfigMap where the args say,
	// every variable it needs set, the secret ones from a Secret.
	var mounted bool
	for _, vm := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil && v.ConfigMap.Name == m.configMap.Name &&
				vm.MountPath == filepath.Dir(configPath) && vm.SubPath == "" && vm.ReadOnly {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("the ConfigMap %q is not mounted read-only at %s (as a directory, so updates reach it)", m.configMap.Name, filepath.Dir(configPath))
	}
	// The root filesystem is read-only, and the image (scratch) has no
	// /tmp: a route with request_buffering: on writes the part of a body
	// beyond server.request_buffer_bytes to a temporary file there.
	tmpDir := "/tmp"
	for _, e := range c.Env {
		if e.Name == "TMPDIR" {
			tmpDir = e.Value
		}
	}
	var writableTmp bool
	for _, vm := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == vm.Name && v.EmptyDir != nil && vm.MountPath == tmpDir && !vm.ReadOnly && vm.SubPath == "" {
				writableTmp = true
			}
		}
	}
	if !writableTmp {
		t.Errorf("no emptyDir mounted writable at %s: under a read-only root filesystem, request bodies buffered to a temporary file (routes[].request_buffering) are answered 500", tmpDir)
	}
	data, ok := m.configMap.Data[filepath.Base(configPath)]
	if !ok {
		t.Fatalf("the ConfigMap has no %s", filepath.Base(configPath))
	}
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case slices.Contains(secretVars, e.Name):
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("env %s: want it from a Secret (valueFrom.secretKeyRef), never a value in the manifest", e.Name)
				continue
			}
			if e.ValueFrom.SecretKeyRef.Optional != nil && *e.ValueFrom.SecretKeyRef.Optional {
				t.Errorf("env %s: optional: a missing secret would start floodgate without it", e.Name)
			}
			vars[e.Name] = placeholder(e.Name)
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		}
	}
	// The Secret the README says to create holds every key the
	// Deployment reads, and no other: a key missing there keeps the pod
	// from starting (CreateContainerConfigError) unless optional.
	readme := string(readFile(t, filepath.Join(kubeDir, "README.md")))
	created := map[string]bool{}
	for _, m := range regexp.MustCompile(`--from-literal=([a-z0-9-]+)=`).FindAllStringSubmatch(readme, -1) {
		created[m[1]] = true
	}
	read := map[string]bool{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			if e.ValueFrom.SecretKeyRef.Name != "floodgate-secrets" {
				t.Errorf("env %s: from the Secret %q, want floodgate-secrets (README.md)", e.Name, e.ValueFrom.SecretKeyRef.Name)
			}
			read[e.ValueFrom.SecretKeyRef.Key] = true
			if !regexp.MustCompile("(?m)^\\| [^|]*`" + regexp.QuoteMeta(e.ValueFrom.SecretKeyRef.Key) + "`[^|]*\\|").MatchString(readme) {
				t.Errorf("the Secret key %s is not in README.md's table of keys", e.ValueFrom.SecretKeyRef.Key)
			}
		}
	}
	if diff := cmp.Diff(created, read); diff != "" {
		t.Errorf("Secret keys (-README.md's kubectl create secret +the Deployment's secretKeyRef):\n%s", diff)
	}
	file := filepath.Join(t.TempDir(), filepath.Base(configPath))
	copyFile(t, file, []byte(data))
	for _, ref := range varRef.FindAllStringSubmatch(data, -1) {
		if _, ok := vars[ref[1]]; !ok && !strings.Contains(data, "${"+ref[1]+":-") {
			t.Errorf("the configuration needs ${%s}, which the Deployment does not set", ref[1])
		}
	}
	cfg := loadConfig(t, file, vars)
	if cfg.Admin.Token == "" {
		t.Error("admin.token is empty: the admin API is then open to loopback only, and the ServiceMonitor's peers cannot use it")
	}
	if !strings.HasPrefix(cfg.Store.URL, "redis") {
		t.Errorf("store.url = %q: replicas need a shared Redis store", cfg.Store.URL)
	}

	// Ports: the listeners listen where the container ports say, on every
	// interface; the probes ask the admin listener.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for name, addr := range map[string]string{"http": cfg.Listen, "admin": cfg.Admin.Listen} {
		host, port, err := net.SplitHostPort(addr)
		if err != nil || (host != "" && host != "0.0.0.0" && host != "::") || port != strconv.Itoa(int(ports[name])) {
			t.Errorf("listener %q: the container port %s is %d: the probes and the Service cannot reach it", addr, name, ports[name])
		}
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path ||
			p.probe.HTTPGet.Port != intstr.FromString("admin") {
			t.Errorf("%s probe = %+v, want GET %s on the admin port", p.name, p.probe, p.path)
		}
	}

	// A replica whose store hangs answers /readyz "ready" within
	// admin.ReadyTimeout (the store's checks cut short); a probe that
	// gives up sooner (Kubernetes' default is 1 s) counts it as failed,
	// and with a store.timeout of a second or more every replica sharing
	// that store would leave the Service at once.
	if rp := c.ReadinessProbe; rp != nil && time.Duration(max(rp.TimeoutSeconds, 1))*time.Second <= admin.ReadyTimeout {
		t.Errorf("readiness probe timeoutSeconds %d (0: Kubernetes' 1 s): want more than /readyz's own bound, %v", rp.TimeoutSeconds, admin.ReadyTimeout)
	}
	// A liveness probe that gives up as soon restarts a pod that is only
	// saturated (GOMAXPROCS from its CPU request: one core), which makes
	// the overload worse.
	if lp := c.LivenessProbe; lp != nil && lp.TimeoutSeconds < 3 {
		t.Errorf("liveness probe timeoutSeconds %d (0: Kubernetes' 1 s): want at least 3", lp.TimeoutSeconds)
	}

	// Shutdown: the preStop sleep lets endpoints stop sending, then
	// floodgate drains for shutdown_grace; the kubelet waits for both.
	grace, err := config.ParseTimeout(cfg.Server.ShutdownGrace)
	if err != nil {
		t.Fatal(err)
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds <= 0 {
		t.Fatalf("preStop = %+v, want a sleep action (the image has no shell)", c.Lifecycle)
	}
	preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	if pod.TerminationGracePeriodSeconds == nil || time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second <= preStop+grace {
		got := "unset"
		if pod.TerminationGracePeriodSeconds != nil {
			got = strconv.FormatInt(*pod.TerminationGracePeriodSeconds, 10)
		}
		t.Errorf("terminationGracePeriodSeconds = %s, want more than preStop %v + server.shutdown_grace %v", got, preStop, grace)
	}

	// Resources and confinement.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
			t.Errorf("no %s request", r)
		}
	}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || q.Cmp(c.Resources.Requests[corev1.ResourceMemory]) < 0 {
		t.Errorf("memory limit %v: want one, at least the request", q.String())
	}
	// GOMAXPROCS is otherwise every core of the node (Go follows a CPU
	// limit, and there is none). GOMEMLIMIT must be left unset: floodgate
	// sets Go's soft limit to 90% of the container's memory limit itself,
	// and the whole limit from the pod's resources would leave the
	// stacks and the runtime's own memory no room under it.
	fromResource := func(name, field string) {
		t.Helper()
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
		if i < 0 {
			t.Errorf("env %s unset: want it from the container's %s (valueFrom.resourceFieldRef)", name, field)
			return
		}
		e := c.Env[i]
		if e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil || e.ValueFrom.ResourceFieldRef.Resource != field ||
			(e.ValueFrom.ResourceFieldRef.ContainerName != "" && e.ValueFrom.ResourceFieldRef.ContainerName != c.Name) {
			t.Errorf("env %s = %+v: want it from the container's %s (valueFrom.resourceFieldRef)", name, e, field)
			return
		}
		// A bare number: bytes for GOMEMLIMIT, cores for GOMAXPROCS.
		if d := e.ValueFrom.ResourceFieldRef.Divisor; !d.IsZero() && d.Cmp(resource1) != 0 {
			t.Errorf("env %s: divisor %s, want 1 (or none): the runtime reads a bare number as %s", name, d.String(), map[string]string{"GOMAXPROCS": "cores"}[name])
		}
	}
	if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" }) {
		t.Error("env GOMEMLIMIT is set: floodgate takes 90% of the container's memory limit unless it is")
	}
	if _, ok := c.Resources.Limits[corev1.ResourceCPU]; !ok {
		fromResource("GOMAXPROCS", "requests.cpu")
	}
	sc, psc := c.SecurityContext, pod.SecurityContext
	if sc == nil || psc == nil {
		t.Fatal("want both a pod and a container securityContext")
	}
	check := func(what string, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("securityContext: want %s", what)
		}
	}
	check("readOnlyRootFilesystem", sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem)
	check("allowPrivilegeEscalation false", sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation)
	check("capabilities drop ALL, add none", sc.Capabilities != nil && slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) && len(sc.Capabilities.Add) == 0)
	check("runAsNonRoot", (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (sc.RunAsNonRoot == nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot))
	check("a non-zero runAsUser", psc.RunAsUser != nil && *psc.RunAsUser != 0 && (sc.RunAsUser == nil || *sc.RunAsUser != 0))
	check("seccompProfile RuntimeDefault",
		(psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault && sc.SeccompProfile == nil) ||
			(sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault))
	check("no privileged container", sc.Privileged == nil || !*sc.Privileged)

	// The Service, disruption budget and autoscaler are the Deployment's.
	selects("the Service", &metav1.LabelSelector{MatchLabels: m.service.Spec.Selector})
	servicePorts := map[string]string{}
	for _, p := range m.service.Spec.Ports {
		if _, ok := ports[p.TargetPort.String()]; !ok {
			t.Errorf("Service port %s targets %s, not a container port", p.Name, p.TargetPort.String())
		}
		servicePorts[p.Name] = p.TargetPort.String()
	}
	if servicePorts["http"] != "http" || servicePorts["admin"] != "admin" {
		t.Errorf("Service ports %v: want http and admin", servicePorts)
	}
	selects("the PodDisruptionBudget", m.pdb.Spec.Selector)
	if mu := m.pdb.Spec.MaxUnavailable; mu == nil || mu.IntValue() < 1 || int32(mu.IntValue()) >= minReplicas {
		t.Errorf("PodDisruptionBudget maxUnavailable = %v: want one replica at a time, leaving at least one of the autoscaler's %d", mu, minReplicas)
	}
	if len(h.Metrics) > 0 && h.Metrics[0].Resource != nil && h.Metrics[0].Resource.Name == corev1.ResourceCPU {
		if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
			t.Error("the autoscaler's CPU utilisation needs a CPU request")
		}
	}

	// Prometheus Operator: every replica's admin listener is scraped.
	sm := m.serviceMonitor.Spec
	sel, err := metav1.LabelSelectorAsSelector(&sm.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(m.service.Labels)) {
		t.Errorf("the ServiceMonitor's selector %v does not select the Service (labels %v)", sm.Selector, m.service.Labels)
	}
	if len(sm.Endpoints) != 1 || sm.Endpoints[0].Port != "admin" || sm.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, want port admin, path /metrics", sm.Endpoints)
	}
}

// resource1 is a resourceFieldRef's default divisor.
var resource1 = resource.MustParse("1")

// placeholder is a value of the kind the variable holds, for validation.
func placeholder(name string) string {
	switch name {
	case "REDIS_URL":
		return "redis://valkey.floodgate.svc:6379"
	case "HMAC_SIGNING_SECRET":
		return strings.Repeat("s", 32)
	}
	return strings.Repeat("x", 24)
}

// generatePrometheusRule writes the alerts file's groups as a
// PrometheusRule, comments and all.
func generatePrometheusRule(t *testing.T) []byte {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(readFile(t, alertsFile), &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	var groups *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "groups" {
			groups = root.Content[i+1]
		}
	}
	if groups == nil {
		t.Fatalf("%s has no groups", alertsFile)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	mapping := func(kv ...*yaml.Node) *yaml.Node {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: kv}
	}
	out := mapping(
		str("apiVersion"), str("monitoring.coreos.com/v1"),
		str("kind"), str("PrometheusRule"),
		str("metadata"), mapping(
			str("name"), str("floodgate"),
			str("labels"), mapping(str("app.kubernetes.io/name"), str("floodgate")),
		),
		str("spec"), mapping(str("groups"), groups),
	)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Generated from deploy/%s by `go generate ./deploy/`:\n"+
		"# edit that file, not this one. Prometheus Operator's ruleSelector may\n"+
		"# want a label here (README.md).\n", alertsFile)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPrometheusRuleMatchesAlerts checks that the PrometheusRule is the
// one generated from the alerts file; -update (go generate) rewrites it.
func TestPrometheusRuleMatchesAlerts(t *testing.T) {
	want := generatePrometheusRule(t)
	if *update {
		if err := os.WriteFile(prometheusRuleFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := readFile(t, prometheusRuleFile); !bytes.Equal(got, want) {
		t.Errorf("%s is not what %s generates: run go generate ./deploy/\n%s", prometheusRuleFile, alertsFile, cmp.Diff(string(got), string(want)))
	}
	// And it says the same, decoded.
	var rule prometheusRule
	unmarshalStrict(t, prometheusRuleFile, readFile(t, prometheusRuleFile), &rule)
	var alerts ruleGroups
	unmarshalStrict(t, alertsFile, readFile(t, alertsFile), &alerts)
	if len(alerts.Groups) == 0 {
		t.Fatalf("%s: no groups", alertsFile)
	}
	if diff := cmp.Diff(rule.Spec, alerts); diff != "" {
		t.Errorf("the PrometheusRule's groups differ from %s (-rule +alerts):\n%s", alertsFile, diff)
	}
}
