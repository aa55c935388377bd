// SPDX-FileCopyrightText: The gardener-extension-shoot-flux authors
//
// SPDX-License-Identifier: Apache-2.0

package leak

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	extensionsv1alpha1 "github.com/gardener/gardener/pkg/apis/extensions/v1alpha1"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shoot-flux/gardener-extension-shoot-flux/pkg/constants"
)

var (
	// SyncTimeout bounds the start of a Recorder's informers.
	SyncTimeout = time.Minute
	// RecordedVerbosity is the highest log verbosity recorded whether or not the wrapped sink
	// logs it: gardener components log at verbosity 1 with --log-level=debug.
	RecordedVerbosity = 1
)

// Sources of recorded texts.
const (
	SourceLog             = "log"
	SourceGardenEvent     = "garden event"
	SourceSeedEvent       = "seed event"
	SourceExtensionStatus = "extension status"
)

// Recorder collects the texts that must not contain private keys (log lines, events, Extension
// statuses) and the private keys to look for (the identity of every Secret it sees in the
// garden), while tests run. Texts are kept once however often they occur.
type Recorder struct {
	mu    sync.Mutex
	texts map[string]map[string]struct{}
	keys  map[string][]byte
	names map[string]string
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{texts: map[string]map[string]struct{}{}, keys: map[string][]byte{}, names: map[string]string{}}
}

func (r *Recorder) record(source, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.texts[source]
	if set == nil {
		set = map[string]struct{}{}
		r.texts[source] = set
	}
	set[text] = struct{}{}
}

// RecordSecret remembers the identity of a Secret, if it has one, as a key to look for.
func (r *Recorder) RecordSecret(secret *corev1.Secret) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The deploy key Secret holds a private key per repository ("<name>.identity"), credentials
	// Secrets hold one ("identity").
	for dataKey, identity := range secret.Data {
		if len(identity) == 0 || (dataKey != constants.SecretKeyIdentity && !strings.HasSuffix(dataKey, "."+constants.SecretKeyIdentity)) {
			continue
		}
		// A rotated key is a new key of the same Secret.
		if _, ok := r.names[string(identity)]; ok {
			continue
		}
		name := fmt.Sprintf("Secret %s/%s", secret.Namespace, secret.Name)
		for i := 2; r.keys[name] != nil; i++ {
			name = fmt.Sprintf("Secret %s/%s (key %d)", secret.Namespace, secret.Name, i)
		}
		r.keys[name] = identity
		r.names[string(identity)] = name
	}
}

// Counts tells how many distinct texts per source and how many keys were recorded, so that a test
// can make sure the scan had something to look at.
func (r *Recorder) Counts() (texts map[string]int, keys int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	texts = map[string]int{}
	for source, set := range r.texts {
		texts[source] = len(set)
	}
	return texts, len(r.keys)
}

// Scan looks for the recorded keys (and the private key marker) in all recorded texts.
func (r *Recorder) Scan() []Finding {
	r.mu.Lock()
	keys := make(map[string][]byte, len(r.keys))
	for name, key := range r.keys {
		keys[name] = key
	}
	texts := map[string][]string{}
	for source, set := range r.texts {
		for text := range set {
			texts[source] = append(texts[source], text)
		}
	}
	r.mu.Unlock()

	scanner := NewScanner(keys)
	var findings []Finding
	sources := make([]string, 0, len(texts))
	for source := range texts {
		sources = append(sources, source)
	}
	sort.Strings(sources)
	for _, source := range sources {
		for _, text := range texts[source] {
			findings = append(findings, scanner.Scan(source, text)...)
		}
	}
	return findings
}

// RecordLogFile records every line of a log file, e.g. of an extension process, as a log text.
func (r *Recorder) RecordLogFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("failed reading log %s: %w", path, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line != "" {
			r.record(SourceLog, line)
		}
	}
	return nil
}

// LogSink returns a sink that records every log call, at every verbosity and with its names,
// key/values and error, and passes it on to next.
func (r *Recorder) LogSink(next logr.LogSink) logr.LogSink {
	return &recordingSink{next: next, rec: r}
}

type recordingSink struct {
	next   logr.LogSink
	rec    *Recorder
	name   string
	values []any
}

func (s *recordingSink) Init(info logr.RuntimeInfo) {
	info.CallDepth++
	s.next.Init(info)
}

// Enabled admits debug messages even if next would drop them: a key in a debug message is as much
// a leak. Higher verbosities are only recorded where next logs them too: from verbosity 8 on,
// client-go dumps request and response bodies, Secrets included, by design.
func (s *recordingSink) Enabled(level int) bool {
	return level <= RecordedVerbosity || s.next.Enabled(level)
}

func (s *recordingSink) Info(level int, msg string, keysAndValues ...any) {
	s.rec.record(SourceLog, s.render(msg, nil, keysAndValues))
	if s.next.Enabled(level) {
		s.next.Info(level, msg, keysAndValues...)
	}
}

func (s *recordingSink) Error(err error, msg string, keysAndValues ...any) {
	s.rec.record(SourceLog, s.render(msg, err, keysAndValues))
	s.next.Error(err, msg, keysAndValues...)
}

func (s *recordingSink) WithValues(keysAndValues ...any) logr.LogSink {
	values := append(append([]any(nil), s.values...), keysAndValues...)
	return &recordingSink{next: s.next.WithValues(keysAndValues...), rec: s.rec, name: s.name, values: values}
}

func (s *recordingSink) WithName(name string) logr.LogSink {
	if s.name != "" {
		name = s.name + "." + name
	}
	return &recordingSink{next: s.next.WithName(name), rec: s.rec, name: name, values: s.values}
}

// render writes a log call out the ways a log sink could: values formatted with %+v, byte slices
// also as text, and everything JSON-encoded (which writes byte slices in base64).
func (s *recordingSink) render(msg string, err error, keysAndValues []any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", s.name, msg)
	if err != nil {
		fmt.Fprintf(&b, " error=%s", err.Error())
	}
	all := append(append([]any(nil), s.values...), keysAndValues...)
	for i := 0; i < len(all); i += 2 {
		var v any = "<missing>"
		if i+1 < len(all) {
			v = all[i+1]
		}
		fmt.Fprintf(&b, " %v=%s", all[i], renderValue(v))
	}
	return b.String()
}

func renderValue(v any) string {
	parts := []string{fmt.Sprintf("%+v", v)}
	if b, ok := v.([]byte); ok {
		parts = append(parts, string(b))
	}
	if j, err := json.Marshal(v); err == nil {
		parts = append(parts, string(j))
	}
	return strings.Join(parts, " | ")
}

// WatchGarden records the garden's Events and the identity of every Secret until ctx ends.
func (r *Recorder) WatchGarden(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) error {
	return r.watch(ctx, cfg, scheme, map[client.Object]func(any){
		&corev1.Event{}: r.eventHandler(SourceGardenEvent),
		&corev1.Secret{}: func(obj any) {
			if s, ok := obj.(*corev1.Secret); ok {
				r.RecordSecret(s)
			}
		},
	})
}

// WatchSeed records the seed's Events and every state of every Extension's status until ctx
// ends.
func (r *Recorder) WatchSeed(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) error {
	return r.watch(ctx, cfg, scheme, map[client.Object]func(any){
		&corev1.Event{}: r.eventHandler(SourceSeedEvent),
		&extensionsv1alpha1.Extension{}: func(obj any) {
			ex, ok := obj.(*extensionsv1alpha1.Extension)
			if !ok {
				return
			}
			if data, err := json.Marshal(ex.Status); err == nil {
				r.record(SourceExtensionStatus, string(data))
			}
		},
	})
}

func (r *Recorder) eventHandler(source string) func(any) {
	return func(obj any) {
		if ev, ok := obj.(*corev1.Event); ok {
			if data, err := json.Marshal(ev); err == nil {
				r.record(source, string(data))
			}
		}
	}
}

func (r *Recorder) watch(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, handlers map[client.Object]func(any)) error {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("failed creating recorder cache: %w", err)
	}
	for obj, handle := range handlers {
		informer, err := c.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("failed getting informer for %T: %w", obj, err)
		}
		if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    handle,
			UpdateFunc: func(_, obj any) { handle(obj) },
		}); err != nil {
			return fmt.Errorf("failed watching %T: %w", obj, err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	syncCtx, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		return fmt.Errorf("the recorder's informers did not sync within %s", SyncTimeout)
	}
	return nil
}
