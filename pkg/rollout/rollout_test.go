// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package rollout_test

import (
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	v1beta1constants "github.com/gardener/gardener/pkg/apis/core/v1beta1/constants"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/config"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/rollout"
)

var _ = Describe("Decide", func() {
	// shootWith has the maintenance window begin-end (e.g. "220000+0000"); empty for none.
	shootWith := func(begin, end string) *gardencorev1beta1.Shoot {
		shoot := &gardencorev1beta1.Shoot{}
		if begin != "" {
			shoot.Spec.Maintenance = &gardencorev1beta1.Maintenance{TimeWindow: &gardencorev1beta1.MaintenanceTimeWindow{Begin: begin, End: end}}
		}
		return shoot
	}
	at := func(hhmm string) time.Time {
		t, err := time.Parse("2006-01-02 15:04", "2026-11-26 "+hhmm)
		Expect(err).NotTo(HaveOccurred())
		return t
	}
	// patch is the change an extension upgrade makes: the minor v2.9 the shoot follows gets a
	// newer embedded patch.
	patch := rollout.Change{
		Component: "Flux", Installed: "v2.9.4", Selected: "v2.9.5",
		Requested: "v2.9", PreviouslyRequested: "v2.9", PreviouslyKnown: true,
		Embedded: []string{"v2.7.5", "v2.9.4", "v2.9.5"},
	}

	DescribeTable("applies a change nobody asked for only in the maintenance window",
		func(shoot *gardencorev1beta1.Shoot, now string, applied bool) {
			d := rollout.Decide(patch, config.RolloutWindowMaintenance, shoot, at(now))
			if applied {
				Expect(d).To(Equal(rollout.Decision{Release: "v2.9.5"}))
				return
			}
			Expect(d.Release).To(Equal("v2.9.4"))
			Expect(d.Pending).To(Equal("v2.9.5"))
			Expect(d.Reason).To(Equal(`Flux v2.9.5 is a newer release of "v2.9", which the shoot selects; it is installed in the shoot's maintenance time window`))
		},
		Entry("inside a window of the day", shootWith("100000+0000", "120000+0000"), "11:00", true),
		Entry("before it", shootWith("100000+0000", "120000+0000"), "09:59", false),
		// gardener's effective window ends 15 minutes early.
		Entry("in its last 15 minutes", shootWith("100000+0000", "120000+0000"), "11:50", false),
		Entry("after it", shootWith("100000+0000", "120000+0000"), "12:30", false),
		Entry("in a window across midnight, before midnight", shootWith("220000+0000", "020000+0000"), "23:30", true),
		Entry("in a window across midnight, after midnight", shootWith("220000+0000", "020000+0000"), "01:00", true),
		Entry("outside a window across midnight", shootWith("220000+0000", "020000+0000"), "12:00", false),
		Entry("in a window in another time zone", shootWith("100000+0200", "120000+0200"), "08:30", true),
		Entry("outside a window in another time zone", shootWith("100000+0200", "120000+0200"), "10:30", false),
		Entry("without a window (gardener's: always)", shootWith("", ""), "12:00", true),
	)

	It("applies it at once to a shoot maintained on request, and with window immediate", func() {
		shoot := shootWith("100000+0000", "120000+0000")
		Expect(rollout.Decide(patch, config.RolloutWindowImmediate, shoot, at("15:00")).Release).To(Equal("v2.9.5"))
		shoot.Annotations = map[string]string{v1beta1constants.GardenerOperation: v1beta1constants.ShootOperationMaintain}
		Expect(rollout.Decide(patch, config.RolloutWindowMaintenance, shoot, at("15:00")).Release).To(Equal("v2.9.5"))
	})

	It("keeps a hibernated shoot on its release outside the window, so that it wakes up with it", func() {
		shoot := shootWith("100000+0000", "120000+0000")
		shoot.Spec.Hibernation = &gardencorev1beta1.Hibernation{Enabled: ptr.To(true)}
		Expect(rollout.Decide(patch, config.RolloutWindowMaintenance, shoot, at("15:00")).Pending).To(Equal("v2.9.5"))
		Expect(rollout.Decide(patch, config.RolloutWindowMaintenance, shoot, at("10:30")).Release).To(Equal("v2.9.5"))
	})

	It("names a moved operator default as the reason", func() {
		c := patch
		c.Requested, c.PreviouslyRequested, c.Installed, c.Selected = "", "", "v2.7.5", "v2.9.5"
		d := rollout.Decide(c, config.RolloutWindowMaintenance, shootWith("100000+0000", "120000+0000"), at("15:00"))
		Expect(d).To(Equal(rollout.Decision{Release: "v2.7.5", Pending: "v2.9.5",
			Reason: "Flux v2.9.5 is what the operator's default version selects now; it is installed in the shoot's maintenance time window"}))
	})

	It("treats a move off an expired release as a change nobody asked for, with its reason", func() {
		c := patch
		c.Installed, c.Selected = "v2.7.5", "v2.9.5"
		c.Forced = "Flux v2.7.5 expired on 2027-03-01; it is replaced by v2.9.5"
		shoot := shootWith("100000+0000", "120000+0000")
		Expect(rollout.Decide(c, config.RolloutWindowMaintenance, shoot, at("15:00"))).To(Equal(rollout.Decision{Release: "v2.7.5", Pending: "v2.9.5",
			Reason: "Flux v2.7.5 expired on 2027-03-01; it is replaced by v2.9.5; it is installed in the shoot's maintenance time window"}))
		Expect(rollout.Decide(c, config.RolloutWindowMaintenance, shoot, at("11:00"))).To(Equal(rollout.Decision{Release: "v2.9.5"}))
	})

	DescribeTable("applies at once what is no change nobody asked for",
		func(mutate func(*rollout.Change)) {
			c := patch
			mutate(&c)
			Expect(rollout.Decide(c, config.RolloutWindowMaintenance, shootWith("100000+0000", "120000+0000"), at("15:00"))).To(Equal(rollout.Decision{Release: c.Selected}))
		},
		Entry("the first installation", func(c *rollout.Change) { c.Installed = "" }),
		Entry("no change", func(c *rollout.Change) { c.Selected = c.Installed }),
		Entry("the owner's or project admin's new selector", func(c *rollout.Change) { c.Requested = "v2.9.5" }),
		Entry("a selector written where the default was", func(c *rollout.Change) { c.PreviouslyRequested = "" }),
		Entry("an installed release this extension version does not embed", func(c *rollout.Change) { c.Embedded = []string{"v2.9.5"} }),
	)

	It("waits after an extension upgrade whose status does not record the selector", func() {
		c := patch
		c.PreviouslyKnown, c.PreviouslyRequested = false, ""
		Expect(rollout.Decide(c, config.RolloutWindowMaintenance, shootWith("100000+0000", "120000+0000"), at("15:00")).Pending).To(Equal("v2.9.5"))
	})
})

var _ = Describe("NextWindow", func() {
	shoot := &gardencorev1beta1.Shoot{Spec: gardencorev1beta1.ShootSpec{Maintenance: &gardencorev1beta1.Maintenance{
		TimeWindow: &gardencorev1beta1.MaintenanceTimeWindow{Begin: "220000+0000", End: "020000+0000"},
	}}}

	It("is the begin of today's window before it, of tomorrow's after it, and now inside it", func() {
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		Expect(rollout.NextWindow(shoot, now)).To(Equal(time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)))
		late := time.Date(2026, 11, 26, 1, 50, 0, 0, time.UTC)
		Expect(rollout.NextWindow(shoot, late)).To(Equal(time.Date(2026, 11, 26, 22, 0, 0, 0, time.UTC)), "after the effective end at 01:45")
		inside := time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)
		Expect(rollout.NextWindow(shoot, inside)).To(Equal(inside))
	})
})
