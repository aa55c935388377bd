// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package releases_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/validation"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
)

var _ = Describe("Lifecycle", func() {
	var (
		now      = time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
		past     = &metav1.Time{Time: now.Add(-time.Hour)}
		future   = &metav1.Time{Time: now.Add(24 * time.Hour)}
		embedded = validation.SupportedVersions{
			Flux:   []string{"v2.7.4", "v2.7.5", "v2.8.1", "v2.9.4", "v2.9.5", "v2.10.0"},
			Kluctl: []string{"v2.28.2"},
		}
		flux = func(listed ...config.ReleaseLifecycle) releases.Component {
			return releases.New(config.Releases{Flux: listed}, embedded).Flux()
		}
		release = func(version string, c config.ReleaseClassification, expires *metav1.Time) config.ReleaseLifecycle {
			return config.ReleaseLifecycle{Version: version, Classification: c, ExpirationDate: expires}
		}
	)

	It("refuses lifecycles that name no single release or an unknown classification, before checking what is embedded", func() {
		cfg := config.Releases{
			Flux: []config.ReleaseLifecycle{
				{Version: "v2.7.5", Classification: config.ReleaseDeprecated},
				{Version: "2.9.5", Classification: config.ReleaseSupported},
				{Version: "v2.9", Classification: config.ReleaseSupported},
				{Version: "v2.7.5", Classification: config.ReleasePreview},
			},
			Kluctl: []config.ReleaseLifecycle{{Version: "v2.28.2", Classification: "retired"}},
		}
		var out []string
		for _, err := range releases.Validate(cfg, embedded, now, field.NewPath("rollout", "releases")) {
			out = append(out, err.Error())
		}
		Expect(out).To(ConsistOf(
			`rollout.releases.flux[1].version: Invalid value: "2.9.5": must be a release with a leading v, e.g. v2.9.5`,
			`rollout.releases.flux[2].version: Invalid value: "v2.9": must be a release with a leading v, e.g. v2.9.5`,
			`rollout.releases.flux[3].version: Duplicate value: "v2.7.5"`,
			`rollout.releases.kluctl[0].classification: Unsupported value: "retired": supported values: "supported", "deprecated", "preview"`,
		))
	})

	It("treats a release the operator does not list as supported and never expiring", func() {
		c := flux()
		Expect(c.Classification("v2.9.5")).To(Equal(config.ReleaseSupported))
		Expect(c.Expired("v2.9.5", now)).To(BeFalse())
		replacement, move := c.Replacement("v2.9.5", now)
		Expect(replacement).To(Equal("v2.9.5"))
		Expect(move).To(BeNil())
		Expect(c.Warning("flux.version", "v2.9.5", now)).To(BeEmpty())
	})

	It("keeps a release until the moment it expires", func() {
		c := flux(release("v2.7.5", config.ReleaseDeprecated, &metav1.Time{Time: now}))
		Expect(c.Expired("v2.7.5", now.Add(-time.Nanosecond))).To(BeFalse())
		Expect(c.Expired("v2.7.5", now)).To(BeTrue())
	})

	DescribeTable("replaces an expired release as Gardener force-updates Kubernetes versions",
		func(from, to string, listed ...config.ReleaseLifecycle) {
			replacement, move := flux(listed...).Replacement(from, now)
			Expect(move).NotTo(BeNil())
			Expect(move.From).To(Equal(from))
			Expect(move.Expired).To(Equal(past.Time))
			Expect(move.To).To(Equal(to))
			if to == "" {
				Expect(replacement).To(Equal(from), "kept: nothing replaces it")
			} else {
				Expect(replacement).To(Equal(to))
			}
		},
		Entry("the newest supported patch of its minor", "v2.9.4", "v2.9.5",
			release("v2.9.4", config.ReleaseDeprecated, past)),
		Entry("the newest supported patch of the next minor when its minor has none", "v2.7.5", "v2.8.1",
			release("v2.7.4", config.ReleaseDeprecated, past), release("v2.7.5", config.ReleaseDeprecated, past)),
		Entry("never an older patch of its minor", "v2.7.5", "v2.8.1",
			release("v2.7.5", config.ReleaseDeprecated, past)),
		Entry("skipping a minor whose releases are deprecated, expired or preview", "v2.7.5", "v2.9.5",
			release("v2.7.5", config.ReleaseSupported, past), release("v2.8.1", config.ReleaseDeprecated, nil)),
		Entry("skipping expired patches of its minor", "v2.9.4", "v2.10.0",
			release("v2.9.4", config.ReleaseSupported, past), release("v2.9.5", config.ReleaseSupported, past)),
		Entry("never to a preview release", "v2.9.5", "",
			release("v2.9.5", config.ReleaseSupported, past), release("v2.10.0", config.ReleasePreview, nil)),
	)

	It("tells why a release is replaced", func() {
		_, move := flux(release("v2.7.5", config.ReleaseDeprecated, past)).Replacement("v2.7.5", now)
		Expect(move.Reason("Flux")).To(Equal("Flux v2.7.5 expired on 2027-03-01; it is replaced by v2.8.1"))
		_, move = flux(release("v2.10.0", config.ReleaseSupported, past)).Replacement("v2.10.0", now)
		Expect(move.Reason("Flux")).To(Equal("Flux v2.10.0 expired on 2027-03-01 and no supported release of its or a later minor is embedded to replace it"))
	})

	DescribeTable("warns about a selection",
		func(l config.ReleaseLifecycle, warning string) {
			Expect(flux(l).Warning("spec.extensions[0].providerConfig.flux.version", l.Version, now)).To(Equal(warning))
		},
		Entry("deprecated", release("v2.7.5", config.ReleaseDeprecated, nil),
			"spec.extensions[0].providerConfig.flux.version selects Flux v2.7.5, which is deprecated"),
		Entry("deprecated with an expiration date", release("v2.7.5", config.ReleaseDeprecated, future),
			"spec.extensions[0].providerConfig.flux.version selects Flux v2.7.5, which is deprecated and expires on 2027-03-02; "+
				"shoots on it are then moved to a supported release in their maintenance time window"),
		Entry("preview", release("v2.10.0", config.ReleasePreview, nil),
			"spec.extensions[0].providerConfig.flux.version selects Flux v2.10.0, which is a preview release"),
		Entry("supported with an expiration date", release("v2.9.5", config.ReleaseSupported, future),
			"spec.extensions[0].providerConfig.flux.version selects Flux v2.9.5, which expires on 2027-03-02"),
		Entry("supported", release("v2.9.5", config.ReleaseSupported, nil), ""),
	)

	It("refuses a listed release that is not embedded, naming the field", func() {
		errs := releases.Validate(config.Releases{
			Flux:   []config.ReleaseLifecycle{release("v2.9.5", config.ReleaseSupported, nil), release("v2.6.0", config.ReleaseDeprecated, nil)},
			Kluctl: []config.ReleaseLifecycle{release("v2.27.0", config.ReleaseDeprecated, nil)},
		}, embedded, now, field.NewPath("rollout", "releases"))
		Expect(errs).To(HaveLen(2))
		Expect(errs[0].Field).To(Equal("rollout.releases.flux[1].version"))
		Expect(errs[0].Type).To(Equal(field.ErrorTypeNotSupported))
		Expect(errs[1].Field).To(Equal("rollout.releases.kluctl[0].version"))
	})

	It("refuses an expiration that nothing could replace when it comes", func() {
		errs := releases.Validate(config.Releases{
			Kluctl: []config.ReleaseLifecycle{release("v2.28.2", config.ReleaseSupported, future)},
		}, embedded, now, field.NewPath("rollout", "releases"))
		Expect(errs).To(HaveLen(1))
		Expect(errs[0].Field).To(Equal("rollout.releases.kluctl[0].expirationDate"))
		Expect(errs[0].Detail).To(ContainSubstring("no supported release of v2.28 or a later minor replaces v2.28.2"))
	})
})
