// Package deploy holds no code: its tests check the ways floodgate is
// deployed against the real binary and configuration loader. The
// Dockerfile at the repository root builds an image with the release
// binary, the CA certificates and deploy/container/floodgate.yaml and
// nothing else; deploy/compose runs two replicas sharing Valkey, with
// Prometheus and Grafana; deploy/kubernetes is a kustomization whose
// PrometheusRule is generated from deploy/prometheus/floodgate-alerts.yml.
package deploy

// The PrometheusRule is rewritten from the alerts file by the test that
// checks they agree.
//go:generate go test -run TestPrometheusRuleMatchesAlerts -update .
