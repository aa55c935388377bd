// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package validator

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/apis/flux/helper"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/fluxconfig"
	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/releases"
)

// releasePolicy applies the operator's release lifecycle to what a tenant selects: a new selection
// of an expired release is denied, a selection of a deprecated, preview, expiring or expired
// release draws a warning.
type releasePolicy struct {
	lifecycle *releases.Lifecycle
	now       func() time.Time
}

func (r releasePolicy) component(key string) releases.Component {
	return r.lifecycle.Component(key)
}

// check returns the denials of selections and adds the warnings to ctx. A selection is new unless
// old selects the same release of the component: a shoot that already selected a release before
// it expired keeps being admitted, and moves in its maintenance time window.
func (r releasePolicy) check(ctx context.Context, selections, old []fluxconfig.Selection) field.ErrorList {
	if r.lifecycle == nil {
		return nil
	}
	now := r.now()
	var errs field.ErrorList
	for _, s := range selections {
		c := r.component(s.Component)
		release, err := helper.ResolveVersion(s.Selector, c.Embedded)
		if err != nil {
			// The field validation reports it.
			continue
		}
		if c.Expired(release, now) && !r.selects(old, s.Component, release) {
			date, _ := c.Expiration(release)
			errs = append(errs, field.Invalid(s.Field, s.Selector, fmt.Sprintf("selects %s %s, which expired on %s; select a supported release: %s",
				c.Name, release, date.UTC().Format(time.DateOnly), strings.Join(helper.VersionSelectors(c.Usable(now)), ", "))))
			continue
		}
		if w := c.Warning(s.Field.String(), release, now); w != "" {
			addWarning(ctx, w)
		}
	}
	return errs
}

func (r releasePolicy) selects(selections []fluxconfig.Selection, component, release string) bool {
	for _, s := range selections {
		if s.Component != component {
			continue
		}
		if resolved, err := helper.ResolveVersion(s.Selector, r.component(component).Embedded); err == nil && resolved == release {
			return true
		}
	}
	return false
}

type warningsKey struct{}

// warnings collects the warnings of one admission request.
type warnings struct {
	mu   sync.Mutex
	list []string
}

// addWarning adds a warning to the response of the request of ctx; without withWarnings around
// the handler it is dropped.
func addWarning(ctx context.Context, warning string) {
	if w, ok := ctx.Value(warningsKey{}).(*warnings); ok {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.list = append(w.list, warning)
	}
}

// withWarnings returns warnings the validators add to the response: gardener's webhook handler,
// which runs the validators, only passes a denial on.
func withWarnings(inner admission.Handler) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		w := &warnings{}
		resp := inner.Handle(context.WithValue(ctx, warningsKey{}, w), req)
		if resp.Allowed {
			w.mu.Lock()
			resp.Warnings = append(resp.Warnings, w.list...)
			w.mu.Unlock()
		}
		return resp
	})
}
