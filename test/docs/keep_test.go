// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package docs_test

import (
	"regexp"
	"strings"

	resourcesv1alpha1 "github.com/gardener/gardener/pkg/apis/resources/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/v1alpha1"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/bootstrap"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/controllers"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/component/managedresource"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/manifests"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/sshkey"
)

// deletionDoc is the page with the table of what stays in the shoot after disabling, in its section
// deletionSection.
const (
	deletionDoc     = "docs/usage/deletion.md"
	deletionSection = "What disabling does"
)

// keepRow is a row of the table in deletionDoc: the objects it names (`Kind` or `Kind name`, a
// name in angle brackets standing for any name) and whether they stay.
type keepRow struct {
	objects []string
	stays   bool
	line    int
}

// keepTable parses the "What stays in the shoot after disabling" table of deletionDoc.
func keepTable() []keepRow {
	GinkgoHelper()
	usage := documentNamed(documents(), deletionDoc)
	var (
		rows    []keepRow
		inTable bool
	)
	for _, l := range usage.section(deletionSection) {
		if strings.HasPrefix(l.text, "| What | Objects the extension delivers | After disabling |") {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(l.text, "|---") {
			continue
		}
		if !strings.HasPrefix(l.text, "|") {
			break
		}
		cells := strings.Split(strings.Trim(l.text, "|"), " | ")
		Expect(cells).To(HaveLen(3), deletionDoc+":%d", l.number)
		after := strings.TrimSpace(cells[2])
		Expect(after).To(Or(HavePrefix("stay"), HavePrefix("deleted")), deletionDoc+":%d: the last column starts with stay or deleted", l.number)
		row := keepRow{stays: strings.HasPrefix(after, "stay"), line: l.number}
		for _, m := range inlineCode.FindAllStringSubmatch(cells[1], -1) {
			row.objects = append(row.objects, m[1])
		}
		rows = append(rows, row)
	}
	Expect(rows).NotTo(BeEmpty(), deletionDoc+" has no table of what stays after disabling")
	return rows
}

// deliveredObject is an object in one of the extension's ManagedResources.
type deliveredObject struct {
	kind, name string
	kept       bool
}

// delivered renders the objects of both ManagedResources for every embedded release, every
// component, every bootstrap mode and both kinds of source, with every optional object.
func delivered() []deliveredObject {
	GinkgoHelper()
	var objs []*unstructured.Unstructured
	decode := func(data map[string][]byte, err error) {
		GinkgoHelper()
		Expect(err).NotTo(HaveOccurred())
		o, err := managedresource.ObjectsOfData(data)
		Expect(err).NotTo(HaveOccurred())
		objs = append(objs, o...)
	}
	for _, flux := range manifests.FluxVersions() {
		for _, kluctl := range manifests.KluctlVersions() {
			pull := manifests.Tuning{ImagePullSecret: []byte(`{"auths":{}}`)}
			decode(controllers.Data(controllers.Values{
				Flux:   manifests.FluxOptions{Version: flux, Components: manifests.FluxComponents(), Namespace: v1alpha1.DefaultFluxNamespace, Tuning: pull},
				Kluctl: &manifests.KluctlOptions{Version: kluctl, Namespace: v1alpha1.DefaultKluctlNamespace, Tuning: pull},
			}))
		}
	}
	for _, providerConfig := range []string{
		`{"source":{"url":"ssh://git@github.com/example/fleet"}}`,
		`{"flux":{"components":["source-controller","kustomize-controller"]},"source":{"url":"ssh://git@github.com/example/fleet"},"bootstrap":{"mode":"flux"}}`,
		`{"source":{"oci":{"url":"oci://registry.example.com/fleet"}}}`,
		`{"flux":{"components":["source-controller","kustomize-controller"]},"source":{"oci":{"url":"oci://registry.example.com/fleet"}},"bootstrap":{"mode":"flux"}}`,
	} {
		cfg, err := fluxconfig.Resolve(fluxconfig.Defaults{FluxVersion: manifests.FluxVersions()[0], KluctlVersion: manifests.KluctlVersions()[0]},
			manifests.SupportedVersions(), sshkey.DefaultKnownHostsLimits(), nil, &runtime.RawExtension{Raw: []byte(providerConfig)})
		Expect(err).NotTo(HaveOccurred())
		url, credentials := cfg.Source.URL, &bootstrap.Credentials{Host: "github.com", Data: map[string][]byte{"identity": []byte("key"), "known_hosts": []byte("github.com ssh-ed25519 AAAA")}}
		if cfg.Source.OCI != nil {
			url, credentials = cfg.Source.OCI.URL, &bootstrap.Credentials{Host: "registry.example.com", Repository: "fleet", Data: map[string][]byte{"username": []byte("u"), "password": []byte("p")}}
		}
		decode(bootstrap.Data(bootstrap.Values{
			Config:            cfg,
			URL:               url,
			Credentials:       credentials,
			Decryption:        map[string][]byte{"identity.agekey": []byte("age")},
			AdditionalSecrets: []bootstrap.Secret{{Name: "regcred", Namespace: "apps", Data: map[string][]byte{"x": []byte("y")}}},
			Shoot:             &bootstrap.ShootInfo{Project: "p", Name: "s", Namespace: "garden-p"},
			Status:            &v1alpha1.FluxStatus{BootstrapMode: string(cfg.Bootstrap.Mode)},
		}))
	}
	out := make([]deliveredObject, 0, len(objs))
	for _, o := range objs {
		out = append(out, deliveredObject{kind: o.GetKind(), name: o.GetName(), kept: o.GetAnnotations()[resourcesv1alpha1.KeepObject] == "true"})
	}
	return out
}

var placeholder = regexp.MustCompile(`^<[^>]+>$`)

// rowOf returns the index of the row that names an object: by kind and name, else by kind and a
// placeholder name, else by kind alone; -1 if none does.
func rowOf(rows []keepRow, o deliveredObject) int {
	for _, match := range []func(kind, name string) bool{
		func(kind, name string) bool { return kind == o.kind && name == o.name },
		func(kind, name string) bool { return kind == o.kind && placeholder.MatchString(name) },
		func(kind, name string) bool { return kind == o.kind && name == "" },
	} {
		for i, r := range rows {
			for _, obj := range r.objects {
				kind, name, _ := strings.Cut(obj, " ")
				if match(kind, name) {
					return i
				}
			}
		}
	}
	return -1
}

var _ = Describe(deletionDoc+": what stays in the shoot after disabling", func() {
	It("names every delivered object in the row that says whether it stays, as the keep-object annotation does", func() {
		rows := keepTable()
		used := map[string]bool{}
		var missing []string
		for _, o := range delivered() {
			i := rowOf(rows, o)
			if i == -1 {
				missing = append(missing, o.kind+" "+o.name)
				continue
			}
			Expect(rows[i].stays).To(Equal(o.kept), deletionDoc+":%d: %s %s: keep-object annotation %t", rows[i].line, o.kind, o.name, o.kept)
			for _, obj := range rows[i].objects {
				kind, name, _ := strings.Cut(obj, " ")
				if kind == o.kind && (name == o.name || name == "" || placeholder.MatchString(name)) {
					used[obj] = true
				}
			}
		}
		Expect(missing).To(BeEmpty(), "delivered, but not in the table")
		for _, r := range rows {
			for _, obj := range r.objects {
				Expect(used).To(HaveKey(obj), deletionDoc+":%d names %s, which the extension does not deliver", r.line, obj)
			}
		}
	})
})
