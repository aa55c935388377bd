// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"time"

	gardencorev1beta1 "github.com/gardener/gardener/pkg/apis/core/v1beta1"
	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoot-flux/gardener-extension-shoot-flux/test/sandbox"
)

var _ = Describe("Health check rounds", func() {
	start := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	at := func(seconds float64) time.Time { return start.Add(time.Duration(seconds * float64(time.Second))) }

	Describe("healthCheckTimes", func() {
		It("takes the health check's successful status updates per namespace, in order", func() {
			event := func(verb, subresource, namespace string, seconds float64, code int) sandbox.AuditEvent {
				ev := sandbox.AuditEvent{Stage: "ResponseComplete", Verb: verb, StageTimestamp: at(seconds),
					ObjectRef: &sandbox.AuditObjectRef{Resource: "extensions", Subresource: subresource, Namespace: namespace}}
				ev.ResponseStatus = &struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				}{Code: code}
				return ev
			}
			times := healthCheckTimes([]sandbox.AuditEvent{
				event("update", "status", "a", 61, 200),
				event("update", "status", "a", 1, 200),
				event("patch", "status", "a", 2, 200),  // the actuator's or the generic reconciler's
				event("update", "status", "b", 3, 409), // a conflict is no check
				event("update", "", "b", 4, 200),
				event("update", "status", "b", 5, 200),
			})
			Expect(times).To(Equal(map[string][]time.Time{"a": {at(1), at(61)}, "b": {at(5)}}))
		})

		It("reads the completion time from the audit log", func() {
			events, _, err := sandbox.ParseAudit(strings.NewReader(`{"stage":"ResponseComplete","verb":"update","objectRef":{"resource":"extensions","subresource":"status","namespace":"a"},"stageTimestamp":"2026-11-27T06:00:01.500000Z"}
`), func(sandbox.AuditEvent) bool { return true })
			Expect(err).NotTo(HaveOccurred())
			Expect(healthCheckTimes(events)).To(Equal(map[string][]time.Time{"a": {at(1.5)}}))
		})
	})

	Describe("analyzeChecks", func() {
		It("times the first round and the oldest check of the steady state", func() {
			times := map[string][]time.Time{
				"a":     {at(-5), at(2), at(62), at(122)},
				"b":     {at(10), at(80), at(140)},
				"other": {at(1)},
			}
			s := analyzeChecks(times, []string{"a", "b"}, start, at(11), at(150))
			Expect(s.firstRound).To(Equal(10 * time.Second))
			Expect(s.unchecked).To(BeZero())
			// b went 70 s unchecked from 10 to 80, which ended in the steady state.
			Expect(s.oldest).To(Equal(70 * time.Second))
			Expect(s.intervals).To(Equal([]time.Duration{60 * time.Second, 60 * time.Second, 60 * time.Second, 70 * time.Second}))
		})

		It("counts the time since the last check at the end and shoots never checked", func() {
			times := map[string][]time.Time{"a": {at(1), at(61)}}
			s := analyzeChecks(times, []string{"a", "b"}, start, at(2), at(200))
			Expect(s.unchecked).To(Equal(1))
			Expect(s.oldest).To(Equal(200 * time.Second))
			s = analyzeChecks(times, []string{"a"}, start, at(2), at(200))
			Expect(s.oldest).To(Equal(139 * time.Second))
		})
	})

	Describe("oldestConditionUpdate", func() {
		It("returns the age of the oldest lastUpdateTime of the condition", func() {
			ex := func(conditions ...gardencorev1beta1.Condition) extensionsv1alpha1.Extension {
				e := extensionsv1alpha1.Extension{}
				e.Status.Conditions = conditions
				return e
			}
			cond := func(t string, seconds float64) gardencorev1beta1.Condition {
				return gardencorev1beta1.Condition{Type: gardencorev1beta1.ConditionType(t), LastUpdateTime: metav1.NewTime(at(seconds))}
			}
			oldest, count := oldestConditionUpdate([]extensionsv1alpha1.Extension{
				ex(cond("BootstrapReady", 30), cond("Other", 0)),
				ex(cond("BootstrapReady", 10)),
				ex(),
			}, "BootstrapReady", at(100))
			Expect(oldest).To(Equal(90 * time.Second))
			Expect(count).To(Equal(2))
		})
	})
})
